// RFC 6901 JSON pointers: "~" → "~0", "/" → "~1" (annotation keys such as minimesh.io/inject).
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function pointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${escapePointerToken(String(t))}`).join('');
}

/** Re-roots a patch computed for a pod onto the pod template of a workload ("/spec/template"). */
export function prefixPatch<T extends { path: string }>(ops: readonly T[], prefix: string): T[] {
  if (prefix === '') return [...ops];
  return ops.map((op) => ({ ...op, path: `${prefix}${op.path}` }));
}
