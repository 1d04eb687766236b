package streams

import (
	"bytes"
	"reflect"
	"testing"
)

// encodeFor writes the header Encode writes plus the expected stream, for
// sdk-go's path as for the direct one.
func TestEncodeForAddsTheExpectedStream(t *testing.T) {
	for name, ev := range equivCorpus(t) {
		want, err := Encode(equivSubject, ev)
		if err != nil {
			continue
		}
		b := pooledMsg()
		if err := encodeFor(b, "REIN_TURNS", equivSubject, ev); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := &b.msg
		if v := got.Header.Values("Nats-Expected-Stream"); len(v) != 1 || v[0] != "REIN_TURNS" {
			t.Errorf("%s: Nats-Expected-Stream = %q", name, v)
		}
		got.Header.Del("Nats-Expected-Stream")
		if !reflect.DeepEqual(got.Header, want.Header) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s: header %v, want %v", name, got.Header, want.Header)
		}
	}
}
