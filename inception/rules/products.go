package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reinception/rein/inception"
)

// ProductCatalogue is what a store sells: its product types and, per
// product, each option's values as the store has them. The rules module
// reads it (Config.Products) to tell an option value a product does
// not come in ("size 11" running shoes) from one it does.
type ProductCatalogue struct {
	// Domain is the dialogue domain the catalogue belongs to ("retail").
	Domain   string
	Products []Product
}

// Product is one product type of the catalogue.
type Product struct {
	Name string
	// Words are the lower-case phrases users name the product by: the
	// name, its plural and spelling variants, and its head noun when no
	// other product shares it.
	Words []string
	// Options maps an option kind ("size", "RAM") to its values.
	Options map[string][]string
}

// productAliases are other words users use for a few products.
var productAliases = map[string][]string{
	"t-shirt":          {"tshirt", "t shirt", "tee", "shirt"},
	"e-reader":         {"ereader", "e reader"},
	"running shoes":    {"running shoe", "runners"},
	"hiking boots":     {"hiking boot"},
	"headphones":       {"headset"},
	"wireless earbuds": {"earbuds"},
}

// taubenchProduct is one entry of a τ-bench retail products.json.
type taubenchProduct struct {
	Name     string `json:"name"`
	Variants map[string]struct {
		Options map[string]string `json:"options"`
	} `json:"variants"`
}

// LoadProductCatalogue reads the product catalogue of a τ-bench-format
// data directory: dir/products.json, or dir/retail/products.json when dir
// is the τ-bench root.
func LoadProductCatalogue(dir string) (*ProductCatalogue, error) {
	var data []byte
	var err error
	for _, p := range []string{filepath.Join(dir, "products.json"), filepath.Join(dir, "retail", "products.json")} {
		if data, err = os.ReadFile(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("product catalogue in %s: %w", dir, err)
	}
	return ParseProductCatalogue("retail", data)
}

// ParseProductCatalogue parses a τ-bench products.json (product id →
// {name, variants: {item id → {options}}}).
func ParseProductCatalogue(domain string, data []byte) (*ProductCatalogue, error) {
	var raw map[string]taubenchProduct
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: product catalogue: %w", inception.ErrInvalidConfig, err)
	}
	ids := make([]string, 0, len(raw))
	for id := range raw {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	pc := &ProductCatalogue{Domain: domain}
	for _, id := range ids {
		rp := raw[id]
		if strings.TrimSpace(rp.Name) == "" {
			return nil, fmt.Errorf("%w: product catalogue: product %s has no name", inception.ErrInvalidConfig, id)
		}
		p := Product{Name: rp.Name, Options: map[string][]string{}}
		for _, v := range rp.Variants {
			for kind, val := range v.Options {
				if !containsFold(p.Options[kind], val) {
					p.Options[kind] = append(p.Options[kind], val)
				}
			}
		}
		for k := range p.Options {
			sort.Strings(p.Options[k])
		}
		pc.Products = append(pc.Products, p)
	}
	pc.nameWords()
	return pc, nil
}

// nameWords fills each product's Words.
func (pc *ProductCatalogue) nameWords() {
	heads := map[string]int{}
	for _, p := range pc.Products {
		f := strings.Fields(strings.ToLower(p.Name))
		if len(f) > 1 {
			heads[f[len(f)-1]]++
		}
	}
	for i := range pc.Products {
		p := &pc.Products[i]
		name := strings.ToLower(p.Name)
		words := []string{name, productPlural(name)}
		if strings.Contains(name, "-") {
			words = append(words, strings.ReplaceAll(name, "-", " "), strings.ReplaceAll(name, "-", ""))
		}
		words = append(words, productAliases[name]...)
		if f := strings.Fields(name); len(f) > 1 && heads[f[len(f)-1]] == 1 {
			words = append(words, f[len(f)-1], productPlural(f[len(f)-1]))
		}
		p.Words = words
	}
}

func productPlural(w string) string {
	switch {
	case strings.HasSuffix(w, "s"):
		return w
	case strings.HasSuffix(w, "sh"), strings.HasSuffix(w, "ch"):
		return w + "es"
	}
	return w + "s"
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
