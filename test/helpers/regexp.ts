/**
 * One regular expression written as several literals, joined in order: an
 * expected message longer than a line stays a regular expression, checked
 * by the parser part by part. Split between atoms, never inside a group, a
 * class or an escape.
 */
export function joinRegExp(parts: readonly RegExp[], flags = ''): RegExp {
  return new RegExp(parts.map((p) => p.source).join(''), flags)
}
