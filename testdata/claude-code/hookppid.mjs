// hookppid.mjs: a non-shell hook command; records its own ppid and the parent's comm, to see if Claude Code's
// `sh -c` wrapper execs the command (then ppid = claude) or forks it (then ppid = sh).
import fs from 'node:fs';
const pp = process.ppid;
const comm = fs.readFileSync(`/proc/${pp}/comm`, 'utf8').trim();
const gpp = fs.readFileSync(`/proc/${pp}/stat`, 'utf8').split(') ')[1].split(' ')[1];
fs.appendFileSync((process.env.CC ?? '.') + '/logs/hookppid.txt', JSON.stringify({ event: process.argv[2], pid: process.pid, ppid: pp, parent_comm: comm, grandparent: gpp }) + '\n');
