package gce

import (
	"encoding/base64"
	"encoding/binary"
	"time"
)

// newID is the next resource ID: a 64-bit number as GCE's look, fixed by
// the seed and how many came before.
func (e *Emulator) newID() uint64 {
	e.seq++
	x := e.cfg.Seed + e.seq*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	if x == 0 {
		x = 1
	}
	return x
}

// pacific is the offset GCE writes timestamps in.
var pacific = time.FixedZone("PST", -8*60*60)

// timestamp formats t as GCE's RFC 3339 timestamps with milliseconds.
func (e *Emulator) timestamp(t time.Time) string {
	return t.In(pacific).Format("2006-01-02T15:04:05.000-07:00")
}

// fingerprint is an 8-byte fingerprint of s, base64 as GCE's look.
func fingerprint(s string) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, fnv64(s)))
}
