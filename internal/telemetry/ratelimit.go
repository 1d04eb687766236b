package telemetry

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// TenantLimiter is a token bucket per tenant: Rate requests a second on
// average, bursts of Burst. It keeps at most MaxTenants buckets; a bucket
// that is full again is forgotten (a new one behaves the same), and when
// that frees none, a new tenant is refused until one does.
type TenantLimiter struct {
	rate  rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// NewTenantLimiter returns a limiter; perSecond <= 0 disables it (nil).
func NewTenantLimiter(perSecond float64, burst, maxTenants int) *TenantLimiter {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	if maxTenants < 1 {
		maxTenants = 10000
	}
	return &TenantLimiter{rate: rate.Limit(perSecond), burst: burst, max: maxTenants, now: time.Now, buckets: map[string]*rate.Limiter{}}
}

// Allow takes one token of tenant's bucket. When there is none it returns
// false and how long until there is.
func (l *TenantLimiter) Allow(tenant string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets[tenant]
	if !found {
		if len(l.buckets) >= l.max {
			for k, v := range l.buckets {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.buckets, k)
				}
			}
		}
		if len(l.buckets) >= l.max {
			return false, time.Duration(float64(time.Second) / float64(l.rate))
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[tenant] = b
	}
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// TooManyRequests answers 429 with Retry-After (whole seconds, at least 1).
func TooManyRequests(w http.ResponseWriter, retryAfter time.Duration, body any) {
	secs := max(1, int(math.Ceil(retryAfter.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeJSON(w, http.StatusTooManyRequests, body)
}
