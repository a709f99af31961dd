// What a service account may do (kubectl auth can-i --list) against what it did (the API server's
// audit log), in the same terms: "resource[.group][[names]] verb", e.g. "pods list" or
// "leases.coordination.k8s.io[minimesh-destination-endpoint-write] update".
import type { AuditEvent } from '../drivers/types.js';

// What every authenticated user may do (system:basic-user, system:discovery): not the chart's doing.
const BASELINE = new Set([
  'selfsubjectaccessreviews.authorization.k8s.io',
  'selfsubjectrulesreviews.authorization.k8s.io',
  'selfsubjectreviews.authentication.k8s.io',
]);

/** `kubectl auth can-i --list` table → "resource[names] verb" lines (non-resource URLs and the baseline left out). */
export function parseCanIList(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n').slice(1)) {
    const cols = line.trim().split(/\s{2,}/);
    if (cols.length < 4) continue;
    const [resource, urls, names, verbs] = cols as [string, string, string, string];
    if (urls !== '[]' || BASELINE.has(resource)) continue;
    const nameList = names.replace(/^\[|\]$/g, '').trim();
    for (const verb of verbs
      .replace(/^\[|\]$/g, '')
      .split(/\s+/)
      .filter(Boolean))
      out.add(`${resource}${nameList ? `[${nameList.split(/\s+/).join(',')}]` : ''} ${verb}`);
  }
  return [...out].sort();
}

/** One request the audit log shows `user` making with RBAC's consent. */
export interface UsedPermission {
  /** resource[.group][/subresource], as can-i names it */
  resource: string;
  verb: string;
  /** The object's name, for requests on one object. */
  name?: string;
}

/**
 * Every distinct (resource, verb, name) `user` used, from the audit events RBAC allowed (requests it
 * refused are `summarizeAudit`'s `denied`, not uses). Non-resource URLs (/api, /version) are left out.
 */
export function permissionsUsed(events: readonly AuditEvent[], user: string): UsedPermission[] {
  const seen = new Map<string, UsedPermission>();
  for (const e of events) {
    if (e.user?.username !== user || !e.objectRef?.resource) continue;
    if (e.annotations?.['authorization.k8s.io/decision'] === 'forbid') continue;
    const { resource, subresource, apiGroup, name } = e.objectRef;
    // As can-i names it: "httproutes.gateway.networking.k8s.io/status".
    const full = `${resource}${apiGroup ? `.${apiGroup}` : ''}${subresource ? `/${subresource}` : ''}`;
    const key = `${full} ${e.verb} ${name ?? ''}`;
    if (!seen.has(key)) seen.set(key, { resource: full, verb: e.verb, ...(name ? { name } : {}) });
  }
  return [...seen.values()];
}

/** The granted permissions ("resource[names] verb", as parseCanIList gives them) that no use matched. */
export function unusedPermissions(granted: readonly string[], used: readonly UsedPermission[]): string[] {
  return granted.filter((g) => {
    const m = /^([^[\s]+)(?:\[([^\]]*)\])? (\S+)$/.exec(g);
    if (!m) return true;
    const [, resource, names, verb] = m as unknown as [string, string, string | undefined, string];
    const allowed = names?.split(',');
    return !used.some(
      (u) =>
        u.resource === resource && u.verb === verb && (!allowed || (u.name !== undefined && allowed.includes(u.name))),
    );
  });
}
