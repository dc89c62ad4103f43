#!/bin/sh
# tmux-start.sh NAME [claude args...] : start an interactive claude in tmux session NAME, in /home/dev/proj
name=$1; shift
tmux new-session -d -s "$name" -x 200 -y 50 -c /home/dev/proj \
  "env HOME=$CC/home ANTHROPIC_BASE_URL=http://127.0.0.1:8787 ANTHROPIC_API_KEY=sk-ant-dummy CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 MEMORYD_TOKEN=tok123 PATH=$CC/node_modules/.bin:\$PATH claude $*; sleep 600"
