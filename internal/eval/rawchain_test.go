package eval

import (
	"context"
	"testing"
)

func TestRawChainDeliversEveryMessage(t *testing.T) {
	res, err := RunRawChain(context.Background(), t.TempDir(), 2000, 512)
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 2000 || res.MsgsPerSec <= 0 || res.P99Ms < res.P50Ms {
		t.Fatalf("result %+v", res)
	}
}

func TestRawShapeStoresTheExtraMessages(t *testing.T) {
	res, err := RunRawShape(context.Background(), t.TempDir(), 1000, 512, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Msgs != 1000 || res.MsgsPerSec <= 0 || res.SideMsgs != 5000 {
		t.Fatalf("result %+v", res)
	}
}
