package main

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the run happened.
type machine struct {
	cpu, ram, kernel, goBench, goServer, sqlite, fs, load string
	cpus                                                  int
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func describeMachine(ctx context.Context, scratch, bin string) (machine, error) {
	m := machine{cpu: "unknown", ram: "unknown", kernel: "unknown", fs: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch strings.TrimSpace(k) {
			case "processor":
				m.cpus++
			case "model name":
				m.cpu = strings.TrimSpace(v)
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.ram = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.goBench = fmt.Sprintf("%s %s/%s, GOMAXPROCS %d", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	m.goServer = "unknown"
	if bi, err := buildinfo.ReadFile(bin); err == nil {
		m.goServer = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == "modernc.org/sqlite" {
				m.goServer += ", modernc.org/sqlite " + d.Version
			}
		}
	}
	v, err := sqliteVersion(ctx)
	if err != nil {
		return m, err
	}
	m.sqlite = v
	m.fs = filesystemOf(scratch)
	m.load = loadAverage()
	return m, nil
}

// filesystemOf names the filesystem type and mount point holding dir,
// from /proc/self/mountinfo.
func filesystemOf(dir string) string {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	best, fstype := "", "unknown"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(postFields) < 1 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, fstype = mp, postFields[0]
		}
	}
	if best == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s (mounted at %s)", fstype, best)
}
