package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// flagEnv names the environment variable that stands in for each flag that
// has one. The flag's definition holds the default; the variable applies
// when the command line does not give the flag, through the flag's own
// parser, so a value that does not parse stops the start instead of
// quietly meaning the default.
type flagEnv map[string]string

// apply sets each flag the command line did not give from its variable.
// The error names the variable, its value and what is accepted.
func (fe flagEnv) apply(fs *flag.FlagSet, getenv env) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, key := range fe {
		v := getenv(key)
		if v == "" || given[name] {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return usageError{fmt.Sprintf("%s=%q cannot be used: %s (it stands for --%s)", key, v, accepted(fs.Lookup(name)), name)}
		}
	}
	return nil
}

// accepted says what a flag's parser takes, from the type of its value.
func accepted(f *flag.Flag) string {
	switch f.Value.(flag.Getter).Get().(type) {
	case bool:
		return "give true or false (1 or 0)"
	case time.Duration:
		return "give a duration with its unit, such as 10s, 2m or 1h30m"
	case int, int64, uint, uint64:
		return "give a whole number"
	case float64:
		return "give a number"
	}
	return "see `console help`"
}

// envBool reads a boolean variable that has no flag; a value that does not
// parse is an error naming it.
func envBool(getenv env, key string) (bool, error) {
	v := getenv(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, usageError{fmt.Sprintf("%s=%q cannot be used: give true or false (1 or 0)", key, v)}
	}
	return b, nil
}
