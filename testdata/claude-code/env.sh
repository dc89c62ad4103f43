# source this: environment for running the real claude CLI offline against the scripted server
export HOME=$CC/home
export ANTHROPIC_BASE_URL=http://127.0.0.1:8787
export ANTHROPIC_API_KEY=sk-ant-dummy
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
export DISABLE_AUTOUPDATER=1
export PATH=$CC/node_modules/.bin:$PATH
