/**
 * Headless Chromium for the page tests (playwright-core drives the system's
 * Chromium; nothing is downloaded): a fresh profile per test, removed
 * afterwards, and the flags that keep it from calling out to a network that
 * is not there.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestContext } from 'node:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/** Without the background-networking flags Chromium keeps calling out to a network that is not there. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** A browser for one test, closed and its profile removed when the test ends. */
export async function openBrowser(
  t: TestContext,
  viewport: { width: number; height: number } = { width: 1400, height: 1000 },
): Promise<BrowserContext> {
  assert.ok(
    existsSync(CHROMIUM),
    `the page tests need Chromium at ${CHROMIUM} (Debian package chromium; deploy/local/system-deps.sh ` +
      `installs it, CHROMIUM_PATH names another)`,
  )
  const profile = mkdtempSync(path.join(os.tmpdir(), 'benchstream-chromium-'))
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  })
  // One hook, in this order: after hooks run in the order they were added, and removing the profile while the
  // browser still writes into it fails (ENOTEMPTY).
  t.after(async () => {
    await browser.close()
    rmSync(profile, { recursive: true, force: true })
  })
  return browser
}

/**
 * What a page reports as an error, from now on: uncaught exceptions and console errors, less those `expected` says
 * the page meant (a test asserts the list is empty at its end).
 */
export function collectPageErrors(page: Page, expected: (text: string) => boolean = () => false): string[] {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(err.message))
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected(m.text())) errors.push(m.text())
  })
  return errors
}
