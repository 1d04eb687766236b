package pipeline

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/llm"
)

// Modules choose and configure the inception module: its name (rules,
// llm or cascade), taxonomy file, plan mode and model.
type Modules struct {
	// OnClient, when set, is told of each model client built (a stage
	// registers its availability with /readyz).
	OnClient func(endpoint string, c llm.Client)
	Module   string
	Taxonomy string
	Plan     string
	// GateModel adds a classifier to the cascade's rules gate: "" for
	// none (the rules alone), "builtin" for the one rein ships, or the
	// path of a weights file rein detect --train-gate wrote.
	GateModel string
	// TypedModel adds the typed classifier to the rules module's precise
	// mode (the rules module, and the cascade's fallback): "" for none,
	// "builtin" for the one rein ships, or the path of a weights file rein
	// detect --train-typed wrote.
	TypedModel string
	// TauBench is a τ-bench-format data directory (the root or its retail
	// directory): its products.json gives the rules module the product
	// catalogue's options. "" leaves option values unchecked.
	TauBench string
	// Provider, Model and BaseURL override REIN_LLM_*.
	Provider string
	Model    string
	BaseURL  string
	// Record and Cassette record the inception model's calls to, or
	// answer them from, a cassette file.
	Record, Cassette string
	// HeldOut names error types held out of the taxonomy (rein eval
	// --held-out: the unseen slice).
	HeldOut []string
	// WrapClient, when set, wraps the inception model's client (rein eval
	// estimates tokens for a model that reports no usage).
	WrapClient func(llm.Client) llm.Client
	// FewShot, when above 0, shows the llm module (alone or in the cascade)
	// up to this many of each tenant's labelled turns in its prompt
	// (opt-in); the detector reads them from REIN_LABELS into Examples
	// when it starts.
	FewShot  int
	Examples map[string][]inception.Example
}

// LLMConfig is the model configuration: REIN_LLM_* from the environment,
// overridden by the fields given.
func (f Modules) LLMConfig() llm.Config {
	cfg := llm.ConfigFromEnv()
	if f.Provider != "" {
		cfg.Provider = f.Provider
	}
	if f.Model != "" {
		cfg.Model = f.Model
	}
	if f.BaseURL != "" {
		cfg.BaseURL = f.BaseURL
	}
	return cfg
}

// Build returns the configured module and its taxonomy.
func (f Modules) Build(reg prometheus.Registerer) (inception.Module, *inception.Taxonomy, error) {
	tax := inception.DefaultTaxonomy()
	if f.Taxonomy != "" {
		var err error
		if tax, err = inception.LoadTaxonomy(f.Taxonomy); err != nil {
			return nil, nil, err
		}
	}
	if len(f.HeldOut) > 0 {
		var err error
		if tax, err = tax.WithHeldOut(f.HeldOut...); err != nil {
			return nil, nil, err
		}
	}
	products, err := f.Products()
	if err != nil {
		return nil, nil, err
	}
	newLLM := func() (inception.Module, error) {
		lc := f.LLMConfig()
		lc.Endpoint = llm.PurposeInception
		if f.Record != "" {
			lc.Record = f.Record
		}
		if f.Cassette != "" {
			lc.Cassette = f.Cassette
		}
		client, err := llm.New(lc, reg)
		if err != nil {
			return nil, fmt.Errorf("--module %s needs a model: %w", f.Module, err)
		}
		if f.WrapClient != nil {
			client = f.WrapClient(client)
		}
		if f.OnClient != nil {
			f.OnClient(llm.PurposeInception, client)
		}
		return llmmodule.NewLLM(llmmodule.LLMConfig{Taxonomy: tax, Client: client, Plan: f.Plan, Examples: f.Examples, MaxExamples: f.FewShot})
	}
	typed, err := loadModel("--typed-model", f.TypedModel, learned.DefaultTypedModel)
	if err != nil {
		return nil, nil, err
	}
	switch f.Module {
	case inception.ModuleRules:
		m, err := precise(tax, typed, products)
		if err != nil {
			return nil, nil, err
		}
		return m, tax, nil
	case inception.ModuleLLM:
		m, err := newLLM()
		return m, tax, err
	case inception.ModuleCascade:
		gate, err := f.Gate(tax)
		if err != nil {
			return nil, nil, err
		}
		model, err := newLLM()
		if err != nil {
			return nil, nil, err
		}
		c, err := llmmodule.NewCascade(gate, model)
		if err != nil {
			return nil, nil, err
		}
		// The inception model down: the rules module in its precise mode
		// decides, recorded as such, rather than failing open.
		if c.Fallback, err = precise(tax, typed, products); err != nil {
			return nil, nil, err
		}
		return c, tax, nil
	}
	return nil, nil, fmt.Errorf("--module %q: want rules, llm or cascade", f.Module)
}

// precise is the rules module in its precise mode with the typed
// classifier: the rules module, and the cascade's fallback.
func precise(tax *inception.Taxonomy, typed *learned.GateModel, products *rules.ProductCatalogue) (*rules.Module, error) {
	m, err := rules.New(rules.Config{Taxonomy: tax, TypedModel: typed, Products: products})
	if err != nil {
		return nil, fmt.Errorf("--typed-model: %w", err)
	}
	return m, nil
}

// Gate returns the cascade's recall gate: the rules module in RulesRecall
// mode with the classifier GateModel names.
func (f Modules) Gate(tax *inception.Taxonomy) (*rules.Module, error) {
	products, err := f.Products()
	if err != nil {
		return nil, err
	}
	cfg := rules.Config{Taxonomy: tax, Mode: rules.Recall, Products: products}
	if cfg.GateModel, err = loadModel("--gate-model", f.GateModel, learned.DefaultGateModel); err != nil {
		return nil, err
	}
	m, err := rules.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--gate-model: %w", err)
	}
	return m, nil
}

// loadModel returns the classifier a --gate-model or --typed-model value
// names: nil for "", the built-in one, or a weights file's.
func loadModel(flag, name string, builtin func() *learned.GateModel) (*learned.GateModel, error) {
	switch name {
	case "":
		return nil, nil
	case GateModelBuiltin:
		return builtin(), nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	g, err := learned.ParseGateModel(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	return g, nil
}

// Products loads the product catalogue TauBench names (nil when unset).
func (f Modules) Products() (*rules.ProductCatalogue, error) {
	if f.TauBench == "" {
		return nil, nil
	}
	pc, err := rules.LoadProductCatalogue(f.TauBench)
	if err != nil {
		return nil, fmt.Errorf("--taubench: %w", err)
	}
	return pc, nil
}

// GateModelBuiltin names the gate classifier rein ships (Modules.GateModel).
const GateModelBuiltin = "builtin"
