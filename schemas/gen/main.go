package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/reinception/rein/schemas/schemagen"
)

func main() {
	dir := flag.String("dir", "schemas/jsonschema", "directory to write the schema files into")
	flag.Parse()
	if err := schemagen.Write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
