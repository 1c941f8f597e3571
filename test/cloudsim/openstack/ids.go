package openstack

import (
	crand "crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// idGen makes resource IDs. They are deterministic for a given seed, as
// the AWS emulator's are, so a failing test reproduces with the same IDs.
// Callers hold e.mu.
type idGen struct{ rng *rand.Rand }

func newIDGen(seed uint64) idGen {
	return idGen{rand.New(rand.NewPCG(seed, 0x6f70656e737461))}
}

func (g idGen) bytes16() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], g.rng.Uint64())
	binary.BigEndian.PutUint64(b[8:], g.rng.Uint64())
	return b
}

// uuid is a version 4 UUID, as Nova and Neutron IDs are.
func (g idGen) uuid() string { return formatUUID(g.bytes16()) }

// hex32 is a UUID4 without dashes, as Keystone IDs are (uuid4().hex).
func (g idGen) hex32() string {
	b := g.bytes16()
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

func formatUUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// randomUUID is for values that must not be guessable or need not be
// reproducible: request IDs.
func randomUUID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return formatUUID(b)
}

// newTokenID returns a Fernet-looking token: "gAAAAAB" and URL-safe
// base64, about as long as Keystone's. Tokens are secrets, so they come
// from crypto/rand, never from the seeded generator.
func newTokenID() string {
	var b [132]byte
	_, _ = crand.Read(b[:])
	return "gAAAAAB" + base64.URLEncoding.EncodeToString(b[:])
}

// newAuditID is a token audit ID: 16 random bytes, URL-safe base64
// without padding (22 characters), as Keystone makes them.
func newAuditID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
