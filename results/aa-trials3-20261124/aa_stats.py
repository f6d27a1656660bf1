import json, math, sys, collections, statistics
def ents(p):
    d=json.load(open(p+'/results.json'))
    return {e['name']:e for st in d['studies'].values() for e in st['entries'] if e['status']=='ok' and e.get('time_s')}
A,B=ents(sys.argv[1]),ents(sys.argv[2])
rows=[]
for k in A.keys()&B.keys():
    a,b=A[k],B[k]; r=b['time_s']['median']/a['time_s']['median']-1
    tr=[t['time_s']['median'] for t in (a.get('trials') or []) if t.get('time_s')]
    sd=statistics.stdev([math.log(x) for x in tr]) if len(tr)>1 else None
    rows.append((abs(r), a['device'], a.get('protocol'), a['time_s']['median'], k, sd))
g=collections.defaultdict(list)
for x in rows:
    g[(x[1], x[2], '>=100us' if x[3]>=1e-4 else '<100us')].append(x)
print('group | n | within 2% | within 5% | median |d| | median sd between trials (run 1)')
for k in sorted(g):
    v=g[k]; sds=[x[5] for x in v if x[5] is not None]
    print(k, len(v), f"{sum(x[0]<=0.02 for x in v)/len(v):.0%}", f"{sum(x[0]<=0.05 for x in v)/len(v):.0%}", f"{statistics.median(x[0] for x in v):.2%}", f"{statistics.median(sds):.2%}" if sds else '-')
if len(sys.argv)>3:
    for x in sorted(rows, reverse=True)[:int(sys.argv[3])]:
        if x[1]=='gpu' and x[3]>=1e-4: print(f"{x[0]:.3f} {x[2]} {x[3]*1e3:.3f}ms {x[4]}")
