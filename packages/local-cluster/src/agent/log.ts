// The node agent's log: JSON lines on stdout (the cluster sends them to logs/node-agent.log).
export interface AgentLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): AgentLog;
}

export function createAgentLog(base: Record<string, unknown> = {}): AgentLog {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) =>
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields })}\n`);
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (f) => createAgentLog({ ...base, ...f }),
  };
}
