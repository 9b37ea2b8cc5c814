import { get, type Json } from '../lib/api.ts';
import { html, Loadable, num, PageTitle, Time, useLoad } from '../lib/ui.ts';

type Day = { date: string; queries: number; ingests: number; creditsCharged: number };

/** The 30 UTC daily buckets as an inline SVG bar chart (queries and ingests side by side per day). */
function DailyChart({ days }: { days: Day[] }) {
  const W = 720;
  const H = 200;
  const pad = { top: 12, right: 8, bottom: 28, left: 36 };
  const max = Math.max(1, ...days.map((d) => Math.max(d.queries, d.ingests)));
  const slot = (W - pad.left - pad.right) / days.length;
  const bar = Math.max(2, slot / 2 - 2);
  const y = (v: number) => pad.top + (H - pad.top - pad.bottom) * (1 - v / max);
  const total = days.reduce((s, d) => ({ q: s.q + d.queries, i: s.i + d.ingests }), { q: 0, i: 0 });
  const ticks = [0, Math.round(max / 2), max].filter((v, i, a) => a.indexOf(v) === i);
  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title chart-desc" focusable="false">
      <title id="chart-title">Daily usage, last 30 UTC days</title>
      <desc id="chart-desc">${`${total.q} queries and ${total.i} ingests from ${days[0]?.date} to ${days.at(-1)?.date}.`}</desc>
      ${ticks.map(
        (t) => html`<g><line x1=${pad.left} x2=${W - pad.right} y1=${y(t)} y2=${y(t)} class="grid" />
          <text x=${pad.left - 6} y=${y(t) + 4} text-anchor="end" class="axis">${t}</text></g>`,
      )}
      ${days.map((d, i) => {
        const x = pad.left + i * slot + 1;
        return html`<g>
          <rect class="bar-q" x=${x} y=${y(d.queries)} width=${bar} height=${y(0) - y(d.queries)}><title>${`${d.date}: ${d.queries} queries`}</title></rect>
          <rect class="bar-i" x=${x + bar + 1} y=${y(d.ingests)} width=${bar} height=${y(0) - y(d.ingests)}><title>${`${d.date}: ${d.ingests} ingests`}</title></rect>
          ${i % 5 === 0 || i === days.length - 1
            ? html`<text x=${x + bar} y=${H - 10} text-anchor="middle" class="axis">${d.date.slice(5)}</text>`
            : null}
        </g>`;
      })}
    </svg>
    <figcaption><span class="key-q"></span> queries <span class="key-i"></span> ingests</figcaption>
    <details>
      <summary>Daily numbers as a table</summary>
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Queries</th><th scope="col">Ingests</th><th scope="col">Credits charged</th></tr></thead>
        <tbody>${[...days].reverse().map(
          (d) => html`<tr><th scope="row">${d.date}</th><td>${d.queries}</td><td>${d.ingests}</td><td>${d.creditsCharged}</td></tr>`,
        )}</tbody>
      </table></div>
    </details>
  </figure>`;
}

function QuotaRow({ label, q }: { label: string; q: Json }) {
  return html`<tr><th scope="row">${label}</th>
    <td><meter min="0" max=${q.limit} value=${q.used} aria-label=${`${label}: ${q.used} of ${q.limit} used`}></meter> ${num(q.used)} / ${num(q.limit)}</td>
    <td>${num(q.remaining)}</td><td><${Time} iso=${q.resetAt} /></td></tr>`;
}

/** Credits, quota counters, recent ledger rows and the daily chart (GET /v1/account/usage). */
export function UsagePage() {
  const [state, reload] = useLoad(() => get('/v1/account/usage?ledgerLimit=20'));
  return html`<${PageTitle}>Usage</${PageTitle}>
    <${Loadable} state=${state} retry=${reload}>${(u: Json) => html`
      <section aria-labelledby="credits-title">
        <h2 id="credits-title">Credits</h2>
        <dl class="stats">
          <div><dt>Total remaining</dt><dd>${num(u.credits.balance.totalRemaining)}</dd></div>
          <div><dt>Monthly allowance left</dt><dd>${num(u.credits.monthly.remaining)} <span class="muted">of ${num(u.credits.monthly.allowance)}</span></dd></div>
          <div><dt>Onboarding credits</dt><dd>${num(u.credits.onboarding.remaining)}</dd></div>
          <div><dt>Monthly reset</dt><dd><${Time} iso=${u.credits.monthly.resetAt} /></dd></div>
        </dl>
      </section>
      <section aria-labelledby="daily-title">
        <h2 id="daily-title">Last 30 days</h2>
        <${DailyChart} days=${u.daily} />
      </section>
      <section aria-labelledby="quota-title">
        <h2 id="quota-title">Quotas</h2>
        <div class="table-wrap"><table>
          <thead><tr><th scope="col">Counter</th><th scope="col">Used</th><th scope="col">Remaining</th><th scope="col">Resets</th></tr></thead>
          <tbody>
            <${QuotaRow} label="Queries today" q=${u.quotas.query.daily} />
            <${QuotaRow} label="Queries this month" q=${u.quotas.query.monthly} />
            <${QuotaRow} label="Ingests today" q=${u.quotas.ingest.daily} />
            <${QuotaRow} label="Ingests this month" q=${u.quotas.ingest.monthly} />
          </tbody>
        </table></div>
      </section>
      <section aria-labelledby="ledger-title">
        <h2 id="ledger-title">Recent credit ledger</h2>
        <p class="hint">One line per operation: what it cost in the end (debits negative), after any unused reserve was refunded.</p>
        ${u.ledger.length === 0
          ? html`<p class="muted">No ledger rows yet.</p>`
          : html`<div class="table-wrap"><table>
            <thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Amount</th><th scope="col">Metric</th>
              <th scope="col">Reason</th><th scope="col">Monthly after</th><th scope="col">Onboarding after</th></tr></thead>
            <tbody>${u.ledger.map(
              (r: Json) => html`<tr key=${r.id}><td><${Time} iso=${r.createdAt} /></td><td>${r.kind}</td>
                <td class=${r.amount < 0 ? 'neg' : r.amount > 0 ? 'pos' : ''}>${r.amount > 0 ? '+' : ''}${num(r.amount)}</td>
                <td>${r.metric ?? '—'}</td><td>${r.reason ?? '—'}</td><td>${num(r.monthlyAfter)}</td><td>${num(r.onboardingAfter)}</td></tr>`,
            )}</tbody></table></div>`}
      </section>`}
    </${Loadable}>`;
}
