// The status.parents a route should carry, and whether it carries it already: for each parentRef
// minimesh answers for (a Service; a policy.minimesh.io Server; a policy.minimesh.io parent of
// another kind) one entry with controllerName minimesh.io/policy-controller and the conditions
// Accepted (and, for a Service, ResolvedRefs) with the Gateway API's reasons. Entries of other
// controllers are kept as they are. Pure: the writer (status-writer.ts) sends what this computes.
import type { ResourceStore, RouteKind } from '../index/store.js';
import {
  egressParentVerdict,
  REASONS,
  refsVerdict,
  serviceParentVerdict,
  type AnyRouteSpec,
  type ParentVerdict,
  type RefsVerdict,
} from '../index/route-attachment.js';
import { isObject, objectMeta, obj, type Json } from '../resources/fields.js';
import { POLICY_GROUP, RESOURCE_KINDS } from '../resources/kinds.js';
import {
  parseParentRefs,
  parseRouteStatus,
  type RouteParent,
  type WrittenParentRef,
} from '../resources/route-parts.js';

/** What minimesh writes as status.parents[].controllerName (Linkerd: linkerd.io/policy-controller). */
export const CONTROLLER_NAME = 'minimesh.io/policy-controller';

export interface RouteCondition {
  type: 'Accepted' | 'ResolvedRefs';
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface RouteParentStatus {
  parentRef: WrittenParentRef;
  controllerName: string;
  conditions: RouteCondition[];
}

/** One route whose status.parents must change. */
export interface RouteStatusUpdate {
  kind: RouteKind;
  namespace: string;
  name: string;
  /** The version the update was computed from (a precondition of the write). */
  resourceVersion?: string;
  /** The whole new status.parents: other controllers' entries, then minimesh's. */
  parents: Json[];
  /** minimesh's entries alone (what changed is judged on these). */
  ours: RouteParentStatus[];
}

/** The API path of a route's status subresource. */
export function statusPath(kind: RouteKind, namespace: string, name: string): string {
  const k = RESOURCE_KINDS[kind];
  return `/apis/${k.group}/${k.version}/namespaces/${namespace}/${k.plural}/${name}/status`;
}

type Verdicts = { accepted: ParentVerdict; refs?: RefsVerdict };

function conditionsOf(v: Verdicts, generation: number | undefined, now: string): RouteCondition[] {
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const out: RouteCondition[] = [
    v.accepted.accepted
      ? {
          type: 'Accepted',
          status: 'True',
          reason: REASONS.accepted,
          message: v.accepted.message,
          lastTransitionTime: now,
          ...gen,
        }
      : {
          type: 'Accepted',
          status: 'False',
          reason: v.accepted.reason,
          message: v.accepted.message,
          lastTransitionTime: now,
          ...gen,
        },
  ];
  if (v.refs)
    out.push(
      v.refs.resolved
        ? {
            type: 'ResolvedRefs',
            status: 'True',
            reason: REASONS.resolvedRefs,
            message: '',
            lastTransitionTime: now,
            ...gen,
          }
        : {
            type: 'ResolvedRefs',
            status: 'False',
            reason: v.refs.reason,
            message: v.refs.message,
            lastTransitionTime: now,
            ...gen,
          },
    );
  return out;
}

/** The verdicts for one parent of a valid route; undefined: not a parent minimesh answers for. */
function verdictsFor(
  store: ResourceStore,
  kind: RouteKind,
  route: AnyRouteSpec,
  parent: RouteParent,
): Verdicts | undefined {
  if (parent.kind === 'service')
    return { accepted: serviceParentVerdict(store, kind, route, parent), refs: refsVerdict(store, route, parent) };
  if (parent.kind === 'egress')
    return { accepted: egressParentVerdict(store, kind, route, parent), refs: refsVerdict(store, route, parent) };
  if (parent.kind === 'server')
    return {
      accepted: store.get('Server', route.meta.namespace, parent.name)
        ? { accepted: true, ports: [], message: '' }
        : {
            accepted: false,
            reason: REASONS.noMatchingParent,
            message: `Server ${route.meta.namespace}/${parent.name} does not exist`,
          },
    };
  if (parent.group === POLICY_GROUP)
    return {
      accepted: {
        accepted: false,
        reason: REASONS.noMatchingParent,
        message:
          kind === 'HTTPRoute'
            ? `a ${POLICY_GROUP} ${parent.resourceKind} is no route parent (a Server, an EgressNetwork or a core Service is)`
            : `minimesh serves ${RESOURCE_KINDS[kind].group} routes on core Service and ${POLICY_GROUP} EgressNetwork parents; a ${POLICY_GROUP} ${parent.resourceKind} parent needs a ${POLICY_GROUP} HTTPRoute`,
      },
    };
  return undefined;
}

/** Parents of an object that could not be parsed (its parents may still be readable). */
function parentsOfInvalid(object: unknown, kind: RouteKind): RouteParent[] {
  try {
    const meta = objectMeta(object, kind);
    const spec = obj((object as { spec?: unknown }).spec, 'spec');
    return parseParentRefs(spec, meta, RESOURCE_KINDS[kind].group);
  } catch {
    return [];
  }
}

/** Copies lastTransitionTime from the condition it had when its status did not change. */
function keepTransitionTimes(ours: RouteParentStatus[], existing: Json[]): void {
  for (const entry of ours) {
    const before = existing.find(
      (e) => e.controllerName === CONTROLLER_NAME && sameParentRef(e.parentRef, entry.parentRef),
    );
    const conds = isObject(before) && Array.isArray(before.conditions) ? before.conditions.filter(isObject) : [];
    for (const c of entry.conditions) {
      const old = conds.find((x) => x.type === c.type);
      if (old && old.status === c.status && typeof old.lastTransitionTime === 'string')
        c.lastTransitionTime = old.lastTransitionTime;
    }
  }
}

function sameParentRef(a: unknown, b: WrittenParentRef): boolean {
  if (!isObject(a)) return false;
  const norm = (x: Record<string, unknown>) =>
    JSON.stringify([x.group ?? '', x.kind ?? '', x.namespace ?? '', x.name, x.port ?? 0, x.sectionName ?? '']);
  return norm(a) === norm(b as unknown as Record<string, unknown>);
}

/** minimesh's entries of a status.parents list, without their times (what "unchanged" compares). */
function comparable(entries: unknown[]): string {
  return JSON.stringify(
    entries
      .filter((e): e is Json => isObject(e) && e.controllerName === CONTROLLER_NAME)
      .map((e) => ({
        parentRef: e.parentRef,
        conditions: (Array.isArray(e.conditions) ? e.conditions.filter(isObject) : []).map(
          ({ lastTransitionTime: _t, ...rest }) => rest,
        ),
      })),
    (_k, v: unknown) =>
      isObject(v) && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

function updateFor(
  kind: RouteKind,
  meta: { namespace: string; name: string; resourceVersion?: string },
  existing: Json[],
  ours: RouteParentStatus[],
): RouteStatusUpdate | undefined {
  keepTransitionTimes(ours, existing);
  if (comparable(existing) === comparable(ours as unknown as Json[])) return undefined;
  const others = existing.filter((e) => e.controllerName !== CONTROLLER_NAME);
  return {
    kind,
    namespace: meta.namespace,
    name: meta.name,
    ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
    parents: [...others, ...(ours as unknown as Json[])],
    ours,
  };
}

/** The routes of a kind whose status must change, and what it must become (`now` stamps new transitions). */
export function routeStatusUpdates(store: ResourceStore, kind: RouteKind, now: string): RouteStatusUpdate[] {
  const out: RouteStatusUpdate[] = [];
  for (const route of store.all(kind) as AnyRouteSpec[]) {
    const ours: RouteParentStatus[] = [];
    for (const parent of route.parents) {
      const v = verdictsFor(store, kind, route, parent);
      if (v)
        ours.push({
          parentRef: parent.written,
          controllerName: CONTROLLER_NAME,
          conditions: conditionsOf(v, route.meta.generation, now),
        });
    }
    const u = updateFor(kind, route.meta, route.status, ours);
    if (u) out.push(u);
  }
  for (const bad of store.invalidRoutes(kind)) {
    const meta = (isObject(bad.object) && isObject(bad.object.metadata) ? bad.object.metadata : {}) as Json;
    const generation = typeof meta.generation === 'number' ? meta.generation : undefined;
    const ours: RouteParentStatus[] = [];
    for (const parent of parentsOfInvalid(bad.object, kind)) {
      const ourParent =
        parent.kind === 'service' ||
        parent.kind === 'server' ||
        parent.kind === 'egress' ||
        (parent.kind === 'other' && parent.group === POLICY_GROUP);
      if (!ourParent) continue;
      ours.push({
        parentRef: parent.written,
        controllerName: CONTROLLER_NAME,
        conditions: conditionsOf(
          { accepted: { accepted: false, reason: REASONS.unsupportedValue, message: bad.message } },
          generation,
          now,
        ),
      });
    }
    const u = updateFor(
      kind,
      {
        namespace: bad.namespace,
        name: bad.name,
        ...(typeof meta.resourceVersion === 'string' ? { resourceVersion: meta.resourceVersion } : {}),
      },
      parseRouteStatus(bad.object),
      ours,
    );
    if (u) out.push(u);
  }
  return out;
}
