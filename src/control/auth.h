// Access control of the handshake (adxl.AuthToken): fresh nonces and
// HMAC-SHA256 proofs over OpenSSL's libcrypto.
//
// Both sides prove that they know the token without sending it: the client
// sends a nonce in Hello, the server answers with its own nonce
// (AuthChallenge), the client proves first (AuthResponse), and only then does
// the server send its region table, with its own proof in HelloAck, which the
// client checks before it uses the link.  A proof is
//   HMAC-SHA256(token, "adxl-auth-v2" | role | from | to | client_nonce | server_nonce)
// with every field length-prefixed and role "client" or "server", so that a
// proof can be replayed neither in the other direction nor in another
// session (both nonces are fresh) nor for another pair of engine names.
// The token should be high-entropy: whoever plays the server to a client
// learns one HMAC of the token (as in any shared-key challenge-response).
#ifndef ADXL_SRC_CONTROL_AUTH_H_
#define ADXL_SRC_CONTROL_AUTH_H_

#include <string>

namespace adxl {
namespace auth {

constexpr size_t kNonceSize = 32;
constexpr size_t kProofSize = 32;  // SHA-256

// kNonceSize cryptographically random bytes; false when the system's random
// source fails.
bool MakeNonce(std::string *out);

enum class Role { kClient, kServer };
// The proof of `role`; empty on a libcrypto failure.
std::string Proof(const std::string &token, Role role, const std::string &from, const std::string &to,
                  const std::string &client_nonce, const std::string &server_nonce);
// Constant-time comparison of a received proof with the expected one.
bool ProofMatches(const std::string &expected, const std::string &received);

}  // namespace auth
}  // namespace adxl

#endif  // ADXL_SRC_CONTROL_AUTH_H_
