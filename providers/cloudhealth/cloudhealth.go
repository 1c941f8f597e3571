// Package cloudhealth keeps, per cloud, when its API last answered and
// when a call last got no usable answer (refused, timed out, 5xx,
// throttled), from every HTTP attempt the backends make (the
// cloudmetrics recorder feeds it). The service controller reads it to
// tell a Service that failed because its cloud was down from one that
// failed on its own, and to retry the former as soon as the cloud answers
// again instead of waiting out their backoff.
//
// It is public, outside providers/internal, because the controllers read
// it.
package cloudhealth

import (
	"net/http"
	"sync"
	"time"
)

// Board is the health of every cloud the process calls.
type Board struct {
	mu     sync.Mutex
	clouds map[string]*state
	now    func() time.Time
}

type state struct {
	answered, unavailable time.Time
	// next is closed at the cloud's next answer (nil: nobody waits).
	next chan struct{}
}

// New returns an empty board; now nil is time.Now.
func New(now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{clouds: map[string]*state{}, now: now}
}

// stateLocked is the cloud's state, made on first use; b.mu is held.
func (b *Board) stateLocked(cloud string) *state {
	s, ok := b.clouds[cloud]
	if !ok {
		s = &state{}
		b.clouds[cloud] = s
	}
	return s
}

// Default is the process's board, fed by the backends' metered calls.
var Default = New(nil)

// Observe records one attempt's outcome: status is its HTTP status (0:
// no response), canceled that the caller gave up first (no verdict on the
// cloud). A response below 500 other than 429 is an answer, even a 403 or
// 404: the cloud is up and said something about the call.
func (b *Board) Observe(cloud string, status int, canceled bool) {
	if canceled || cloud == "" {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stateLocked(cloud)
	if status > 0 && status < 500 && status != http.StatusTooManyRequests {
		s.answered = now
		if s.next != nil {
			close(s.next)
			s.next = nil
		}
	} else {
		s.unavailable = now
	}
}

// NextAnswer is closed when the cloud next answers a call, so a waiter
// learns of the end of an outage at once rather than at its next poll.
func (b *Board) NextAnswer(cloud string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stateLocked(cloud)
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.next
}

// Down says the cloud's last attempt got no usable answer, and since
// when it has not answered (the first unanswered attempt after its last
// answer is not kept: the last unanswered one is).
func (b *Board) Down(cloud string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.clouds[cloud]
	return ok && s.unavailable.After(s.answered)
}

// AnsweredSince says the cloud answered a call after t.
func (b *Board) AnsweredSince(cloud string, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.clouds[cloud]
	return ok && s.answered.After(t)
}

// UnavailableAt is when the cloud's last attempt without a usable
// answer was (zero: none).
func (b *Board) UnavailableAt(cloud string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.clouds[cloud]; ok {
		return s.unavailable
	}
	return time.Time{}
}

// Now is the board's clock, so callers compare times it gave.
func (b *Board) Now() time.Time { return b.now() }
