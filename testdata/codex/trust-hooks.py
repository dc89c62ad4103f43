#!/usr/bin/env python3
# Computes Codex 0.169 hook trust hashes for a hooks.json and prints [hooks.state."<key>"] TOML to append to
# $CODEX_HOME/config.toml. Algorithm (codex-rs/hooks/src/engine/discovery.rs + config/src/fingerprint.rs):
# identity = {"event_name": <snake label>, "matcher"?: m, "hooks": [normalized handler]} with None fields dropped,
# sha256 over compact JSON with keys sorted recursively, "sha256:<hex>".
import json, hashlib, re, sys
path = sys.argv[1]
d = json.load(open(path))
def snake(ev): return re.sub(r'(?<!^)(?=[A-Z])', '_', ev).lower()
def canon(v):
    if isinstance(v, dict): return {k: canon(v[k]) for k in sorted(v)}
    if isinstance(v, list): return [canon(x) for x in v]
    return v
for ev, groups in d['hooks'].items():
    for gi, g in enumerate(groups):
        for hi, h in enumerate(g['hooks']):
            nh = {'type': 'command', 'command': h['command'], 'timeout': max(1, h.get('timeout', 600)), 'async': h.get('async', False)}
            if h.get('statusMessage') is not None: nh['statusMessage'] = h['statusMessage']
            if h.get('additionalContextLimit') is not None: nh['additionalContextLimit'] = h['additionalContextLimit']
            ident = {'event_name': snake(ev), 'hooks': [nh]}
            if g.get('matcher') not in (None,): ident['matcher'] = g['matcher']
            s = json.dumps(canon(ident), separators=(',', ':'), ensure_ascii=False)
            hsh = 'sha256:' + hashlib.sha256(s.encode()).hexdigest()
            print(f'[hooks.state."{path}:{snake(ev)}:{gi}:{hi}"]\ntrusted_hash = "{hsh}"\n')
