package schemas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// Task provenance: a task carries a planted thought the agent will take as
// its own, so the agent worker runs only tasks that rein's injector (or the
// detector fused with it) signed. The signature is an HMAC-SHA256, under a
// key only rein's stages hold, over everything the worker acts on: the
// event's type and id, tenant, conversation and turn extensions, and the
// data bytes exactly as stored. Bus permissions already keep other
// identities off rein.tasks.>; the signature also holds on a cluster whose
// accounts rein does not control, and on a replayed or restored stream.

// ExtSignature is the CloudEvents extension attribute holding a task's
// signature: "v1." followed by the unpadded base64url HMAC.
const ExtSignature = "reinsig"

// MinTaskKeyBytes is the shortest accepted task key.
const MinTaskKeyBytes = 32

// ReasonUnverifiedTask is the dead-letter reason of a task whose signature
// is missing or wrong.
const ReasonUnverifiedTask = "unverified_task"

const sigVersion = "v1."

// TaskKey signs and verifies tasks.
type TaskKey struct {
	key []byte
	// macs holds keyed HMAC states for reuse: a new one hashes the key
	// into its inner and outer pads on every task.
	macs sync.Pool
}

// macState is a keyed HMAC and the buffer its signed bytes are laid out in.
type macState struct {
	h   hash.Hash
	buf []byte
}

// maxMACBuffer is the largest buffer kept with a macState: a rare large
// task does not stay held.
const maxMACBuffer = 64 << 10

// NewTaskKey returns a key of at least MinTaskKeyBytes bytes.
func NewTaskKey(key []byte) (*TaskKey, error) {
	if len(key) < MinTaskKeyBytes {
		return nil, fmt.Errorf("%w: a task key needs at least %d bytes, got %d", ErrBadID, MinTaskKeyBytes, len(key))
	}
	k := &TaskKey{key: append([]byte(nil), key...)}
	k.macs.New = func() any { return &macState{h: hmac.New(sha256.New, k.key)} }
	return k, nil
}

// Sign sets e's signature extension.
func (k *TaskKey) Sign(e *cloudevents.Event) error {
	mac, err := k.mac(e)
	if err != nil {
		return err
	}
	e.SetExtension(ExtSignature, sigVersion+base64.RawURLEncoding.EncodeToString(mac))
	return nil
}

// Verify checks e's signature; the error wraps ErrUnverified and says what
// was wrong (absent, malformed, not rein's).
func (k *TaskKey) Verify(e *cloudevents.Event) error {
	raw, ok := Extension(e, ExtSignature)
	if !ok {
		return fmt.Errorf("%w: the task carries no signature (extension %s)", ErrUnverified, ExtSignature)
	}
	s, ok := raw.(string)
	if !ok || !strings.HasPrefix(s, sigVersion) {
		return fmt.Errorf("%w: the task's signature is not a %s signature", ErrUnverified, strings.TrimSuffix(sigVersion, "."))
	}
	got, err := base64.RawURLEncoding.DecodeString(s[len(sigVersion):])
	if err != nil {
		return fmt.Errorf("%w: the task's signature is not base64url", ErrUnverified)
	}
	want, err := k.mac(e)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	if !hmac.Equal(got, want) {
		return fmt.Errorf("%w: the task's signature does not match (not signed by this rein's injector, or changed since)", ErrUnverified)
	}
	return nil
}

// mac is the HMAC of what the worker acts on. Each field is length-prefixed
// so that no two different tasks share the signed bytes.
func (k *TaskKey) mac(e *cloudevents.Event) ([]byte, error) {
	m, err := MetaOf(e)
	if err != nil {
		return nil, err
	}
	st := k.macs.Get().(*macState)
	defer k.macs.Put(st)
	b := st.buf[:0]
	for _, f := range []string{"rein-task-v1", e.Type(), e.ID(), m.Tenant, m.Conversation} {
		b = append(strconv.AppendInt(b, int64(len(f)), 10), ':')
		b = append(append(b, f...), ';')
	}
	var turn [20]byte
	for _, f := range [][]byte{strconv.AppendInt(turn[:0], int64(m.Turn), 10), e.Data()} {
		b = append(strconv.AppendInt(b, int64(len(f)), 10), ':')
		b = append(append(b, f...), ';')
	}
	if cap(b) <= maxMACBuffer {
		st.buf = b
	}
	st.h.Reset()
	st.h.Write(b)
	return st.h.Sum(nil), nil
}
