/** The pages' few DOM helpers: elements found by id (a missing one is a fault of the page), and made with text. */

/** The element with this id, of this kind; throws when the page has none (the HTML and the script disagree). */
export function byId(id: string): HTMLElement
export function byId<T extends HTMLElement>(id: string, kind: new () => T): T
export function byId(id: string, kind: new () => HTMLElement = HTMLElement): HTMLElement {
  const e = document.getElementById(id)
  if (!(e instanceof kind)) throw new Error(`the page has no ${kind.name} #${id}`)
  return e
}

/** The first element the selector finds; throws when there is none. */
export function find(selector: string): HTMLElement {
  const e = document.querySelector(selector)
  if (!(e instanceof HTMLElement)) throw new Error(`the page has nothing at ${selector}`)
  return e
}

/** A new element with its text (none when null) and class. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string | null,
  cls?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag)
  if (text != null) e.textContent = text
  if (cls) e.className = cls
  return e
}
