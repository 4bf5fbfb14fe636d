#include "control/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdint>

namespace adxl {
namespace auth {
namespace {

void Field(std::string *m, const std::string &v) {
  const uint64_t n = v.size();
  for (int i = 0; i < 8; ++i) m->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  m->append(v);
}

}  // namespace

bool MakeNonce(std::string *out) {
  out->assign(kNonceSize, '\0');
  return RAND_bytes(reinterpret_cast<unsigned char *>(out->data()), static_cast<int>(out->size())) == 1;
}

std::string Proof(const std::string &token, Role role, const std::string &from, const std::string &to,
                  const std::string &client_nonce, const std::string &server_nonce) {
  std::string m;
  Field(&m, "adxl-auth-v2");
  Field(&m, role == Role::kClient ? "client" : "server");
  Field(&m, from);
  Field(&m, to);
  Field(&m, client_nonce);
  Field(&m, server_nonce);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), reinterpret_cast<const unsigned char *>(m.data()),
           m.size(), md, &md_len) == nullptr || md_len != kProofSize) {
    return std::string();
  }
  return std::string(reinterpret_cast<const char *>(md), md_len);
}

bool ProofMatches(const std::string &expected, const std::string &received) {
  return !expected.empty() && expected.size() == received.size() &&
         CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

}  // namespace auth
}  // namespace adxl
