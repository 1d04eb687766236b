package detector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/schemas"
)

// TestConversationCacheKeepsItsByteBudget: a conversation is measured by
// its utterances' text, grows as turns are added and is measured again on
// Resize, and the detector's cache drops the least recently used past its
// byte budget even with room left by count.
func TestConversationCacheKeepsItsByteBudget(t *testing.T) {
	var c Config
	c.defaults()
	if c.MaxCacheBytes != DefaultCacheBytes {
		t.Fatalf("default cache budget %d, want %d", c.MaxCacheBytes, DefaultCacheBytes)
	}
	long := strings.Repeat("x", 1000)
	conv := &conversation{}
	empty := conv.memBytes()
	conv.add(schemas.Turn{Role: schemas.RoleUser, Text: long, Turn: 1}, 1, 40)
	if grown := conv.memBytes() - empty; grown < len(long) {
		t.Fatalf("a 1,000-byte turn grew the measure by %d", grown)
	}
	const budget = 8 << 10
	cache := convcache.New[*conversation](1000, time.Hour).LimitBytes(budget, (*conversation).memBytes)
	for i := range 20 {
		c := &conversation{}
		cache.Put(fmt.Sprint(i), c)
		for turn := 1; turn <= 3; turn++ {
			c.add(schemas.Turn{Role: schemas.RoleUser, Text: long, Turn: turn}, uint64(turn), 40)
			cache.Resize(fmt.Sprint(i))
			if b := cache.Bytes(); b > budget {
				t.Fatalf("conversation %d turn %d: cache holds %d bytes, budget %d", i, turn, b, budget)
			}
		}
	}
	if n := cache.Len(); n >= 20 || n == 0 {
		t.Errorf("cache holds %d of 20 conversations", n)
	}
}
