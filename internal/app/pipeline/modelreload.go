package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/inception/rules"
)

// A model is promoted by a configuration change: the file a learned-model
// path names is replaced (rein train writes it whole), or rein.yaml points
// the path elsewhere. The detector's module is then an inception.Live,
// and modelWatch rebuilds its learned parts when what the paths name
// changes: the rules module, or the cascade's gate and fallback around the
// same model client. No restart, and no turn dropped: a turn being judged
// finishes with the module it started with.

// modelWatch looks for a promoted model every interval.
type modelWatch struct {
	live  *inception.Live
	mods  Modules
	tax   *inception.Taxonomy
	paths func() (gate, typed string, err error)
	every time.Duration
	log   *slog.Logger
	// last identifies the models in place: their paths and contents;
	// refused what last failed to load, reported once.
	last, refused string
}

// newModelWatch wraps the built module in a Live and returns the watch
// that keeps it up to date; key identifies the files the module was built
// from (read before building: a change in between is caught at the first
// look).
func newModelWatch(m inception.Module, tax *inception.Taxonomy, mods Modules, o Stages, key string, log *slog.Logger) *modelWatch {
	w := &modelWatch{live: inception.NewLive(m), mods: mods, tax: tax, paths: o.ModelPaths, every: o.ModelReload, log: log, last: key}
	if w.paths == nil {
		w.paths = func() (string, string, error) { return mods.GateModel, mods.TypedModel, nil }
	}
	return w
}

// modelKey identifies what the model paths name: the paths and a hash of
// each file's content ("builtin" and "" stand for themselves).
func modelKey(gate, typed string) (string, error) {
	key := ""
	for _, p := range []string{gate, typed} {
		key += p + "="
		if p == "" || p == GateModelBuiltin {
			key += ";"
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("model file: %w", err)
		}
		sum := sha256.Sum256(b)
		key += hex.EncodeToString(sum[:]) + ";"
	}
	return key, nil
}

// run looks until ctx ends.
func (w *modelWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := w.check(); err != nil {
			w.log.Warn("inception model: not reloaded; the model in place keeps judging", "err", err)
		}
	}
}

// check reloads the models when what the paths name changed.
func (w *modelWatch) check() error {
	gate, typed, err := w.paths()
	if err != nil {
		return err
	}
	key, err := modelKey(gate, typed)
	if err != nil || key == w.last || key == w.refused {
		return err
	}
	mods := w.mods
	mods.GateModel, mods.TypedModel = gate, typed
	m, err := mods.withLearned(w.live.Current(), w.tax)
	if err != nil {
		w.refused = key
		return err
	}
	w.live.Swap(m)
	w.last, w.refused = key, ""
	w.log.Info("inception model reloaded", "module", m.Name(), "gate_model", gate, "gate_version", versionOf(gate, learned.DefaultGateModel),
		"typed_model", typed, "typed_version", versionOf(typed, learned.DefaultTypedModel))
	return nil
}

// versionOf is the version of the model a path names, "" for none.
func versionOf(path string, builtin func() *learned.GateModel) string {
	g, err := loadModel("", path, builtin)
	if err != nil || g == nil {
		return ""
	}
	return g.Version()
}

// withLearned returns cur with the learned models f names: the rules
// module rebuilt, or the cascade with a new gate and fallback around the
// same model module. A module without learned parts is returned as is.
func (f Modules) withLearned(cur inception.Module, tax *inception.Taxonomy) (inception.Module, error) {
	products, err := f.Products()
	if err != nil {
		return nil, err
	}
	typed, err := loadModel("--typed-model", f.TypedModel, learned.DefaultTypedModel)
	if err != nil {
		return nil, err
	}
	switch m := cur.(type) {
	case *rules.Module:
		return precise(tax, typed, products)
	case *llmmodule.Cascade:
		gate, err := f.Gate(tax)
		if err != nil {
			return nil, err
		}
		fb, err := precise(tax, typed, products)
		if err != nil {
			return nil, err
		}
		return m.WithGate(gate, fb)
	}
	return cur, nil
}
