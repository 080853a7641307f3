/**
 * The live web view: one static page that polls the API every second and
 * draws throughput and p99 per operation for the newest (or chosen) run.
 * No build step and no external assets, so it works offline.
 */
export const liveViewHtml = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Benchstream live</title>
<style>
 body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}
 h1{font-size:1.2rem;margin:0 0 .5rem} select{font:inherit}
 .stats{display:flex;gap:2rem;margin:1rem 0} .stat b{display:block;font-size:1.6rem}
 svg{border:1px solid #ddd;background:#fafafa} .legend span{margin-right:1rem}
 table{border-collapse:collapse;margin-top:1rem} td,th{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:right} th:first-child,td:first-child{text-align:left}
</style></head><body>
<h1>Benchstream live <select id="run"></select></h1>
<div class="stats"><div class="stat">ops/s<b id="ops">-</b></div><div class="stat">p99 (µs)<b id="p99">-</b></div><div class="stat">cache hit<b id="hit">-</b></div><div class="stat">operations<b id="total">-</b></div></div>
<div>Throughput (ops/s) per operation</div><svg id="thr" width="900" height="200"></svg>
<div>p99 latency (µs) per operation</div><svg id="lat" width="900" height="200"></svg>
<div class="legend" id="legend"></div>
<table id="report"></table>
<script>
const colors=['#1f77b4','#d62728','#2ca02c','#9467bd','#ff7f0e','#8c564b'];
const $=id=>document.getElementById(id);
async function j(u){const r=await fetch(u);if(!r.ok)throw new Error(await r.text());return r.json()}
async function runs(){const {runs}=await j('/api/v1/runs?limit=50');const sel=$('run');const cur=sel.value;
 sel.innerHTML=runs.map(r=>'<option>'+r.run_id+'</option>').join('');if(cur)sel.value=cur}
function draw(svg,series,key){const pts=Object.values(series).flat();svg.innerHTML='';if(!pts.length)return;
 const t0=Math.min(...pts.map(p=>p.t)),t1=Math.max(...pts.map(p=>p.t))||t0+1,vmax=Math.max(...pts.map(p=>p[key]))||1;
 const W=svg.width.baseVal.value,H=svg.height.baseVal.value,x=t=>10+(W-20)*(t-t0)/Math.max(1,t1-t0),y=v=>H-15-(H-30)*v/vmax;
 Object.entries(series).forEach(([op,ps],i)=>{const d=ps.map((p,k)=>(k?'L':'M')+x(p.t).toFixed(1)+','+y(p[key]).toFixed(1)).join('');
  svg.insertAdjacentHTML('beforeend','<path d="'+d+'" fill="none" stroke="'+colors[i%6]+'" stroke-width="2"/>')});
 svg.insertAdjacentHTML('beforeend','<text x="12" y="12" font-size="11">max '+Math.round(vmax)+'</text>')}
async function tick(){try{await runs();const id=$('run').value;if(!id)return;
 const {points}=await j('/api/v1/runs/'+encodeURIComponent(id)+'/timeline');const series={};
 for(const p of points)(series[p.op]??=[]).push(p);
 // The newest window may still be filling: show the last complete one.
 const ts=[...new Set(points.map(p=>p.t))].sort((a,b)=>a-b);const last=ts.length>1?ts[ts.length-2]:ts[0];
 const cur=points.filter(p=>p.t===last);$('ops').textContent=Math.round(cur.reduce((a,p)=>a+p.ops,0)).toLocaleString();
 $('p99').textContent=cur.length?Math.max(...cur.map(p=>p.p99)):'-';
 const h=points.reduce((a,p)=>a+p.hits,0),m=points.reduce((a,p)=>a+p.misses,0);$('hit').textContent=h+m?(100*h/(h+m)).toFixed(1)+'%':'-';
 draw($('thr'),series,'ops');draw($('lat'),series,'p99');
 $('legend').innerHTML=Object.keys(series).map((op,i)=>'<span style="color:'+colors[i%6]+'">&#9632; '+op+'</span>').join('');
 const rep=await j('/api/v1/runs/'+encodeURIComponent(id)+'/report');$('total').textContent=rep.operations.toLocaleString();
 $('report').innerHTML='<tr><th>operation</th><th>count</th><th>avg µs</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>'+
  rep.measurements.map(m=>'<tr><td>'+m.name+'</td><td>'+m.operations+'</td><td>'+m.averageLatencyUs.toFixed(1)+'</td><td>'+m.p50LatencyUs+'</td><td>'+m.p95LatencyUs+'</td><td>'+m.p99LatencyUs+'</td><td>'+m.p999LatencyUs+'</td><td>'+m.maxLatencyUs+'</td></tr>').join('')
 }catch(e){console.error(e)}}
$('run').onchange=tick;tick();setInterval(tick,1000);
</script></body></html>`
