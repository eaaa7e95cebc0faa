#include <arpa/inet.h>

#include "rpc/program.h"

namespace geofs::rpc {

std::string PeerAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(is_v4 ? AF_INET : AF_INET6, bytes.data(), text, sizeof(text));
  std::string out = is_v4 ? std::string(text) : "[" + std::string(text) + "]";
  return out + ":" + std::to_string(port);
}

}  // namespace geofs::rpc
