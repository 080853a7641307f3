/** How the experiment page writes a p-value and a change in percent. */
export const fmtP = (p: number | null | undefined): string =>
  p == null ? '–' : p < 0.001 ? p.toExponential(1) : p.toFixed(3)

export const fmtChange = (x: number | null | undefined): string =>
  x == null ? '–' : (x >= 0 ? '+' : '') + x.toFixed(1) + '%'
