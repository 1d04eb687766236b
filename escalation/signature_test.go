package escalation

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestVerifySignature(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"id":"escalation-t-c-1"}`)
	now := time.Unix(1_800_000_000, 0)
	good := Sign(secret, now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	tests := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", good, body, now, nil},
		{"valid within window", good, body, now.Add(4 * time.Minute), nil},
		{"rotation: second v1 matches", "t=" + ts + ",v1=00ff," + good[len("t="+ts+","):], body, now, nil},
		{"replay older than window", good, body, now.Add(6 * time.Minute), ErrSignatureExpired},
		{"timestamp from the future", good, body, now.Add(-6 * time.Minute), ErrSignatureExpired},
		{"body changed", good, []byte(`{"id":"other"}`), now, ErrSignatureMismatch},
		{"other secret", Sign([]byte("nope"), now, body), body, now, ErrSignatureMismatch},
		{"timestamp changed", "t=" + strconv.FormatInt(now.Unix()+1, 10) + good[len("t="+ts):], body, now, ErrSignatureMismatch},
		{"missing", "", body, now, ErrSignatureMissing},
		{"no timestamp", "v1=abcd", body, now, ErrSignatureMalformed},
		{"no signature", "t=" + ts, body, now, ErrSignatureMalformed},
		{"bad timestamp", "t=yesterday,v1=abcd", body, now, ErrSignatureMalformed},
		{"garbage element", "t=" + ts + ",junk", body, now, ErrSignatureMalformed},
		{"duplicate timestamp", "t=" + ts + ",t=" + ts + ",v1=ab", body, now, ErrSignatureMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature(secret, tc.header, tc.body, tc.now, 5*time.Minute)
			if tc.want == nil && err != nil {
				t.Fatalf("want nil, got %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
		})
	}
}
