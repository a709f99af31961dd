// Debian's chromium driven by playwright-core (never a downloaded browser), with the flags that keep it
// off the network: no background networking, component updates, sync or QUIC. playwright gives it a
// fresh profile directory of its own (and refuses --user-data-dir in args).
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.MINIMESH_CHROMIUM ?? '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing: bash scripts/setup.sh installs Debian's chromium`;
}

export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}
