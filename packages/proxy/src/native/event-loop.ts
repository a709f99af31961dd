// The event loop's idle-time accounting, turned off (the addon's stopLoopIdleTime, native/original_dst.cc).
// Node configures libuv with UV_METRICS_IDLE_TIME so that performance.eventLoopUtilization() can tell
// idle from busy time; to measure it, libuv starts every poll with an epoll_pwait of timeout 0 and only
// then waits in a second one: two system calls per wake-up of a proxy that wakes up for every request.
// The proxy reads no event-loop utilization (its /metrics has the event-loop delay, which is timed
// otherwise), so main.ts turns the accounting off at start. After it, eventLoopUtilization() counts no
// idle time in this process.
import { tryAddon } from './addon.js';

/**
 * Turns libuv's idle-time accounting off for this process's event loop. True when it was on and is now
 * off; false when it was off already, when this libuv's layout is not one the addon knows (nothing is
 * touched), or when the addon cannot be loaded or predates the call.
 */
export function stopLoopIdleTime(): boolean {
  return tryAddon()?.stopLoopIdleTime?.() ?? false;
}
