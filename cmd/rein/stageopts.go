package main

import (
	"time"

	"github.com/spf13/pflag"
)

// stageOptions are the flags of the pipeline stages that serve and demo run.
type stageOptions struct {
	modules         moduleFlags
	domain          string
	detectorTimeout time.Duration
	workers         int
}

func (o *stageOptions) bind(fs *pflag.FlagSet, defaultModule string) {
	o.modules.bind(fs, defaultModule)
	fs.StringVar(&o.domain, "domain", "airline", "the agent's domain (airline or retail): its tools are shown to the inception module and run by the agent")
	fs.DurationVar(&o.detectorTimeout, "detector-timeout", 5*time.Second, "deadline of one inception call; past it the turn proceeds without injection")
	fs.IntVar(&o.workers, "workers", 64, "conversations handled in parallel per stage")
}
