# Medians [min..max] of bench/shell/driver-cpu-by-commit.sh runs, and per-round ratios to YCSB and to a base variant.
# usage: by-commit-summary.py RUNS_FILE [BASE_VARIANT]
import collections
import re
import statistics as st
import sys

cpu = collections.defaultdict(list)
ops = collections.defaultdict(list)
rounds = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    m = re.match(r'round (\d+) (\S+) cpu_us_per_op (\S+) ops_s (\S+)', line)
    if m:
        r, v = int(m[1]), m[2]
        cpu[v].append(float(m[3]))
        ops[v].append(float(m[4]))
        rounds[r][v] = float(m[3])
base = sys.argv[2] if len(sys.argv) > 2 else None


def ratio(v, to):
    rr = [rounds[r][v] / rounds[r][to] for r in rounds if v in rounds[r] and to in rounds[r]]
    return f'{st.median(rr):.3f} [{min(rr):.3f}..{max(rr):.3f}]'


for v in cpu:
    x, t = cpu[v], ops[v]
    line = f'{v:14s} CPU {st.median(x):6.2f} [{min(x):.2f}..{max(x):.2f}] us/op'
    line += f'  ops/s {st.median(t):9,.0f} [{min(t):,.0f}..{max(t):,.0f}]'
    if v != 'ycsb' and 'ycsb' in cpu:
        line += f'  /YCSB per round {ratio(v, "ycsb")}'
    if base is not None and v != base and base in cpu and v != 'ycsb':
        line += f'  /{base} {ratio(v, base)}'
    print(line)
