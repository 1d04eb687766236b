package main

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// yamlStrict decodes YAML refusing unknown fields, with line numbers in
// the error.
func yamlStrict(b []byte, out any) error {
	if err := yaml.UnmarshalWithOptions(b, out, yaml.Strict()); err != nil {
		return fmt.Errorf("%s", yaml.FormatError(err, false, true))
	}
	return nil
}
