// The socket options Node does not offer, for the proxy's sockets (called with socket._handle.fd):
// SO_ORIGINAL_DST, the address a connection was sent to before iptables REDIRECTed it (the addon's
// first job, hence its name), and TCP_USER_TIMEOUT, how long sent data may stay unacknowledged before
// the kernel gives the connection up.
//
//   getOriginalDst(fd) -> { address, port, family }   (throws an Error whose .code is the errno name)
//   setTcpUserTimeout(fd, ms) / getTcpUserTimeout(fd) -> ms          (throw the same way)
//   stopLoopIdleTime() -> boolean                                    (see StopLoopIdleTime below)
//
// IPv4 sockets are asked at SOL_IP/SO_ORIGINAL_DST, IPv6 sockets at SOL_IPV6/IP6T_SO_ORIGINAL_DST
// (both option number 80); an IPv6 socket carrying an IPv4-mapped connection is asked the IPv4 way.
#include <napi.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <uv.h>

#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

namespace {

Napi::Value Fail(Napi::Env env, const char* what, int err) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + strerror(err));
  const char* name = err == ENOENT ? "ENOENT" : err == EBADF ? "EBADF" : err == ENOTSOCK ? "ENOTSOCK"
                     : err == ENOPROTOOPT ? "ENOPROTOOPT" : err == EINVAL ? "EINVAL" : "EUNKNOWN";
  e.Set("code", Napi::String::New(env, name));
  e.Set("errno", Napi::Number::New(env, err));
  e.ThrowAsJavaScriptException();
  return env.Undefined();
}

// True when the first `count` arguments are numbers; otherwise a TypeError naming the call (`usage`) is
// thrown to JavaScript and the caller returns undefined.
bool NumberArgs(const Napi::CallbackInfo& info, size_t count, const char* usage) {
  for (size_t i = 0; i < count; i++) {
    if (info.Length() <= i || !info[i].IsNumber()) {
      Napi::TypeError::New(info.Env(), std::string(usage) + ": arguments must be numbers").ThrowAsJavaScriptException();
      return false;
    }
  }
  return true;
}

Napi::Value GetOriginalDst(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!NumberArgs(info, 1, "getOriginalDst(fd)")) return env.Undefined();
  int fd = info[0].As<Napi::Number>().Int32Value();

  // Which family is the socket, and is an IPv6 socket carrying an IPv4-mapped connection?
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return Fail(env, "getsockname", errno);
  bool v4 = local.ss_family == AF_INET;
  if (local.ss_family == AF_INET6) {
    v4 = IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
  } else if (!v4) {
    return Fail(env, "getsockname", EINVAL);
  }

  sockaddr_storage dst{};
  len = sizeof(dst);
  int rc = v4 ? getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len)
              : getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len);
  if (rc != 0) return Fail(env, v4 ? "getsockopt(SOL_IP, SO_ORIGINAL_DST)" : "getsockopt(SOL_IPV6, IP6T_SO_ORIGINAL_DST)", errno);

  char text[INET6_ADDRSTRLEN] = {0};
  Napi::Object out = Napi::Object::New(env);
  if (dst.ss_family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&dst);
    inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
    out.Set("port", Napi::Number::New(env, ntohs(sin->sin_port)));
    out.Set("family", Napi::Number::New(env, 4));
  } else if (dst.ss_family == AF_INET6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&dst);
    inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
    out.Set("port", Napi::Number::New(env, ntohs(sin6->sin6_port)));
    out.Set("family", Napi::Number::New(env, 6));
  } else {
    return Fail(env, "getsockopt returned an unknown address family", EINVAL);
  }
  out.Set("address", Napi::String::New(env, text));
  return out;
}

Napi::Value SetTcpUserTimeout(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!NumberArgs(info, 2, "setTcpUserTimeout(fd, ms)")) return env.Undefined();
  int fd = info[0].As<Napi::Number>().Int32Value();
  unsigned int ms = info[1].As<Napi::Number>().Uint32Value();
  if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) != 0)
    return Fail(env, "setsockopt(IPPROTO_TCP, TCP_USER_TIMEOUT)", errno);
  return env.Undefined();
}

Napi::Value GetTcpUserTimeout(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!NumberArgs(info, 1, "getTcpUserTimeout(fd)")) return env.Undefined();
  int fd = info[0].As<Napi::Number>().Int32Value();
  unsigned int ms = 0;
  socklen_t len = sizeof(ms);
  if (getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, &len) != 0)
    return Fail(env, "getsockopt(IPPROTO_TCP, TCP_USER_TIMEOUT)", errno);
  return Napi::Number::New(env, ms);
}

// Node configures its event loop with UV_METRICS_IDLE_TIME (for performance.eventLoopUtilization()),
// and with it libuv starts every poll with an epoll_pwait of timeout 0 before the one that waits: two
// system calls per wake-up where one would do. The proxy reads no event-loop utilization, so it turns the
// accounting off. libuv has no call for that: the option lives in the flags word that starts the private
// struct uv_loop_t.internal_fields points at (libuv 1.39 onwards, where the option was added), and that
// bit is cleared here. Returns true when it was set and is now cleared; false when it was not set, or
// when this is not a libuv 1.x from 1.39 on (nothing is touched then).
Napi::Value StopLoopIdleTime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const unsigned int version = uv_version();
  if ((version >> 16) != 1 || ((version >> 8) & 0xff) < 39) return Napi::Boolean::New(env, false);
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr || loop->internal_fields == nullptr)
    return Napi::Boolean::New(env, false);
  auto* flags = static_cast<unsigned int*>(loop->internal_fields);
  const unsigned int bit = UV_METRICS_IDLE_TIME;
  if ((*flags & bit) == 0) return Napi::Boolean::New(env, false);
  *flags &= ~bit;
  return Napi::Boolean::New(env, true);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("getOriginalDst", Napi::Function::New(env, GetOriginalDst, "getOriginalDst"));
  exports.Set("setTcpUserTimeout", Napi::Function::New(env, SetTcpUserTimeout, "setTcpUserTimeout"));
  exports.Set("getTcpUserTimeout", Napi::Function::New(env, GetTcpUserTimeout, "getTcpUserTimeout"));
  exports.Set("stopLoopIdleTime", Napi::Function::New(env, StopLoopIdleTime, "stopLoopIdleTime"));
  return exports;
}

}  // namespace

NODE_API_MODULE(original_dst, Init)
