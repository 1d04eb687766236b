package escalation

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HTTP headers of webhook deliveries.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" where
	// the MAC is over "<unix seconds>.<request body>".
	SignatureHeader = "Rein-Signature"
	// IdempotencyKeyHeader carries the CloudEvent id; a retried delivery
	// carries the same key, so a receiver drops duplicates by it.
	IdempotencyKeyHeader = "Idempotency-Key"
)

// DefaultSignatureWindow is the replay window VerifySignature callers
// should use unless they have a reason not to.
const DefaultSignatureWindow = 5 * time.Minute

// Sign returns the SignatureHeader value for body signed at ts with secret.
func Sign(secret []byte, ts time.Time, body []byte) string {
	unix := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + unix + ",v1=" + mac(secret, unix, body)
}

func mac(secret []byte, unix string, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(unix))
	h.Write([]byte{'.'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// VerifySignature checks a SignatureHeader value against body. It rejects a
// timestamp more than window before now (a replay) or more than window after
// it (a skewed or forged clock). Several v1 entries may be present (secret
// rotation); one match suffices. Errors wrap ErrSignatureMissing,
// ErrSignatureMalformed, ErrSignatureExpired or ErrSignatureMismatch.
//
// In binary mode the body is the event data only; the ce-* headers are not
// covered by the signature, so receivers should key idempotency on the
// Idempotency-Key header together with a valid signature, or use
// structured mode where the id is inside the signed body.
func VerifySignature(secret []byte, header string, body []byte, now time.Time, window time.Duration) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrSignatureMissing
	}
	var (
		unix string
		sigs []string
	)
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: element %q", ErrSignatureMalformed, part)
		}
		switch k {
		case "t":
			if unix != "" {
				return fmt.Errorf("%w: duplicate timestamp", ErrSignatureMalformed)
			}
			unix = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if unix == "" {
		return fmt.Errorf("%w: no timestamp", ErrSignatureMalformed)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrSignatureMalformed)
	}
	secs, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q", ErrSignatureMalformed, unix)
	}
	age := now.Sub(time.Unix(secs, 0))
	if age > window || age < -window {
		return fmt.Errorf("%w: signed %s ago, window %s", ErrSignatureExpired, age.Round(time.Second), window)
	}
	want, _ := hex.DecodeString(mac(secret, unix, body))
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}
