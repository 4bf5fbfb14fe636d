// A TCP side channel between the two processes of a test program: the server
// sends its buffer address, the client says when it is done.  (The vendor's
// examples exchange addresses the same way.)
#ifndef VENDOR_HIXL_SYNC_SOCKET_H_
#define VENDOR_HIXL_SYNC_SOCKET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace sync_socket {

// Server: listens on port, accepts one client, sends addr; the connection, or -1.
inline int ServeAddress(int port, uintptr_t addr) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0 || listen(lfd, 1) != 0) {
    printf("[ERROR] cannot listen on port %d\n", port);
    close(lfd);
    return -1;
  }
  int fd = accept(lfd, nullptr, nullptr);
  close(lfd);
  if (fd < 0 || send(fd, &addr, sizeof(addr), 0) != static_cast<ssize_t>(sizeof(addr))) return -1;
  return fd;
}

// Client: connects (retrying for up to 30 s) and receives the address; the connection, or -1.
inline int FetchAddress(int port, uintptr_t *addr) {
  for (int i = 0; i < 300; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
      if (recv(fd, addr, sizeof(*addr), MSG_WAITALL) == static_cast<ssize_t>(sizeof(*addr))) return fd;
      close(fd);
      return -1;
    }
    close(fd);
    usleep(100000);
  }
  printf("[ERROR] no server on port %d\n", port);
  return -1;
}

inline bool SendByte(int fd, char c) { return send(fd, &c, 1, 0) == 1; }

inline bool RecvByte(int fd, char *c) { return recv(fd, c, 1, MSG_WAITALL) == 1; }

}  // namespace sync_socket

#endif  // VENDOR_HIXL_SYNC_SOCKET_H_
