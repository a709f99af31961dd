// The API server's audit log (JSON lines, audit.k8s.io/v1 Event).
import { readFileSync } from 'node:fs';
import { stateDir, statePaths } from './paths.js';

export interface AuditEvent {
  level: string;
  auditID: string;
  stage: string;
  requestURI: string;
  verb: string;
  user: { username: string; uid?: string; groups?: string[] };
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    apiVersion?: string;
    subresource?: string;
  };
  responseStatus?: { code?: number; status?: string; reason?: string; message?: string };
  annotations?: Record<string, string>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  requestObject?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  responseObject?: any;
  userAgent?: string;
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

/** Every event in the audit log so far, optionally filtered. */
export function readAuditEvents(
  filter?: (e: AuditEvent) => boolean,
  path = statePaths(stateDir()).auditLog,
): AuditEvent[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const events: AuditEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const e = JSON.parse(line) as AuditEvent;
      if (!filter || filter(e)) events.push(e);
    } catch {
      /* a line being written */
    }
  }
  return events;
}
