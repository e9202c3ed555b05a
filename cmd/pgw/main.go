// Command pgw shows and steers the breaker and quota state that pgw gateways
// share through Redis.
//
//	pgw [flags] status                  every scope and source: breaker state,
//	                                    override, time to the next probe,
//	                                    cooldown, failures, probe leases,
//	                                    in-flight calls, RPM and TPM used
//	pgw [flags] open  SCOPE SOURCE      force SOURCE open until reset
//	pgw [flags] close SCOPE SOURCE      force SOURCE closed until reset
//	pgw [flags] reset SCOPE SOURCE      clear the override: a fresh closed record
//	pgw help [COMMAND]                  this text, or one command's
//
// Flags (before or after the command, or after its arguments):
//
//	-redis URL       Redis URL (default $PGW_REDIS_URL, else redis://127.0.0.1:6379/0)
//	-cluster ADDRS   Redis Cluster seeds, host:port,… (default $PGW_REDIS_CLUSTER_ADDRS)
//	-prefix P        key prefix (default $PGW_REDIS_PREFIX, else pgw)
//	-timeout D       bound on the whole command (default 10s)
//	-create          open/close/reset a source Redis has no record of
//
// The gateway's own configuration (the PGW_… and {SCOPE}__… keys), when the
// environment holds it, supplies each scope's breaker policy and each
// source's quota limits, so that status can show use against the limits;
// without it status shows upper bounds and the policy defaults.
//
// Exit status: 0 success, 1 Redis or the gate failed, 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/gate"
)

func main() {
	// go-redis logs dial failures itself; the command reports them once.
	goredis.SetLogger(quiet{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usageText = `usage: pgw [flags] status
       pgw [flags] open|close|reset SCOPE SOURCE
       pgw help [COMMAND]

Shows and steers the breaker and quota state pgw gateways share in Redis.

commands:
  status                every scope and source: breaker state, override,
                        time to the next probe, cooldown, failures, probe
                        leases, in-flight calls, RPM and TPM used
  open  SCOPE SOURCE    force SOURCE open until reset (calls fail over or wait;
                        the gate reports no certain retry time)
  close SCOPE SOURCE    force SOURCE closed until reset (failures are counted
                        but never trip it)
  reset SCOPE SOURCE    clear the override: a fresh closed record
  help [COMMAND]        this text, or one command's

flags (before or after the command, or after its arguments):
`

// commandHelp is each command's own help, for pgw help COMMAND.
var commandHelp = map[string]string{
	"status": `usage: pgw [flags] status

Lists every scope and source pgw gateways keep in Redis under the prefix:
breaker state, override, time to the next probe, cooldown, failures, probe
leases, in-flight calls, RPM and TPM used. With the gateway's configuration in
the environment (the PGW_… and {SCOPE}__… keys) it also shows each source's
limits and each scope's policy.
`,
	"open": `usage: pgw [flags] open SCOPE SOURCE

Forces SOURCE of SCOPE open until reset: every process's calls fail over or
wait, and the gate reports no certain retry time. -create forces a source
Redis has no record of yet.
`,
	"close": `usage: pgw [flags] close SCOPE SOURCE

Forces SOURCE of SCOPE closed until reset: failures are counted but never
trip it. -create forces a source Redis has no record of yet.
`,
	"reset": `usage: pgw [flags] reset SCOPE SOURCE

Clears the override of SOURCE of SCOPE: a fresh closed record.
`,
	"help": `usage: pgw help [COMMAND]

Prints the usage, or COMMAND's (status, open, close, reset).
`,
}

// options are the command line's flags.
type options struct {
	redisURL string
	cluster  string
	prefix   string
	timeout  time.Duration
	create   bool
	// from names where redisURL, cluster and prefix came from, for errors:
	// the flag, the environment key or the default.
	from map[string]string
}

// setFrom fills *v from the first of the flag, the environment key and the
// default that is set, and notes which one it was under name.
func (o *options) setFrom(name string, v *string, flagName, envKey, def string) {
	switch {
	case *v != "":
		o.from[name] = "-" + flagName
	case os.Getenv(envKey) != "":
		*v, o.from[name] = os.Getenv(envKey), envKey
	default:
		*v, o.from[name] = def, "the default of -"+flagName
	}
}

// flags binds o to a flag set that prints nothing itself: parse reports.
func (o *options) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.redisURL, "redis", o.redisURL, "Redis `URL` (default $PGW_REDIS_URL, else redis://127.0.0.1:6379/0)")
	fs.StringVar(&o.cluster, "cluster", o.cluster, "Redis Cluster seed `addresses`, host:port,... (default $PGW_REDIS_CLUSTER_ADDRS)")
	fs.StringVar(&o.prefix, "prefix", o.prefix, "key `prefix` (default $PGW_REDIS_PREFIX, else pgw)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "bound on the whole command")
	fs.BoolVar(&o.create, "create", o.create, "open/close/reset a source Redis has no record of")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	return fs
}

// run is the whole command: it parses args, talks to Redis and writes to
// stdout and stderr, returning the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	// Flags default to empty and take the environment after parsing, so
	// that -h never prints a URL that may carry a password.
	o := &options{timeout: 10 * time.Second}
	fs := o.flags("pgw")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "pgw: missing command (legal: status, open, close, reset, help)")
		printUsage(fs, stderr)
		return exitUsage
	}
	cmd := fs.Arg(0)
	if cmd == "help" {
		return help(fs, fs.Args()[1:], stdout, stderr)
	}
	sub := o.flags("pgw " + cmd)
	rest, code, ok := parseInterspersed(sub, fs.Args()[1:], stdout, stderr)
	if !ok {
		return code
	}
	o.from = map[string]string{}
	o.setFrom("redis", &o.redisURL, "redis", "PGW_REDIS_URL", "redis://127.0.0.1:6379/0")
	o.setFrom("cluster", &o.cluster, "cluster", "PGW_REDIS_CLUSTER_ADDRS", "")
	o.setFrom("prefix", &o.prefix, "prefix", "PGW_REDIS_PREFIX", "pgw")

	var force gate.Force
	switch cmd {
	case "status":
		if len(rest) != 0 {
			fmt.Fprintf(stderr, "pgw status: unexpected arguments %q (legal: none)\n", rest)
			return exitUsage
		}
	case "open", "close", "reset":
		if len(rest) != 2 || rest[0] == "" || rest[1] == "" {
			fmt.Fprintf(stderr, "pgw %s: want SCOPE SOURCE, got %q\n", cmd, rest)
			return exitUsage
		}
		if strings.ContainsAny(rest[0], "{}") {
			fmt.Fprintf(stderr, "pgw %s: invalid SCOPE %q (legal: without '{' or '}')\n", cmd, rest[0])
			return exitUsage
		}
		force, _ = gate.ParseForce(cmd)
	default:
		fmt.Fprintf(stderr, "pgw: unknown command %q (legal: status, open, close, reset, help)\n", cmd)
		return exitUsage
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "pgw: invalid -timeout %v (legal: a positive duration, e.g. 10s)\n", o.timeout)
		return exitUsage
	}
	if o.prefix == "" || strings.ContainsAny(o.prefix, "{}") {
		fmt.Fprintf(stderr, "pgw: invalid %s %q (legal: non-empty, without '{' or '}')\n", o.from["prefix"], o.prefix)
		return exitUsage
	}

	if o.cluster != "" {
		if _, ok := seeds(o.cluster); !ok {
			// The value is not shown: a Redis URL pasted here carries its
			// password.
			fmt.Fprintf(stderr, "pgw: invalid %s (legal: comma-separated host:port list, e.g. 10.0.0.1:7000,10.0.0.2:7000; credentials and options go in the Redis URL)\n", o.from["cluster"])
			return exitUsage
		}
	}

	st, err := connect(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "pgw: %v\n", err)
		return exitUsage
	}
	defer st.close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	if cmd == "status" {
		err = st.status(ctx, stdout)
	} else {
		err = st.force(ctx, stdout, strings.ToUpper(rest[0]), rest[1], force, o.create)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pgw %s: %v\n", cmd, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFail
	}
	return exitOK
}

// parse parses args into fs. -h prints the usage on stdout (exit 0); a bad
// flag is reported with the usage on stderr (exit 2).
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, stdout)
		return exitOK, false
	}
	fmt.Fprintf(stderr, "pgw: %v\n", err)
	printUsage(fs, stderr)
	return exitUsage, false
}

// parseInterspersed parses args into fs, flags among the positional
// arguments included, so that "pgw open CHAT primary -create" — the hint an
// unknown source's error gives, appended to the line that got it — works
// like "pgw open -create CHAT primary". A "--" ends the flags: what follows
// it is positional.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (positional []string, code int, ok bool) {
	for {
		if code, ok := parse(fs, args, stdout, stderr); !ok {
			return nil, code, false
		}
		left := fs.Args()
		if len(left) == 0 {
			return positional, 0, true
		}
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(positional, left...), 0, true
		}
		positional = append(positional, left[0])
		args = left[1:]
	}
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	fs.Usage()
	fs.SetOutput(io.Discard)
}

// usageError is a command the user got wrong (exit 2), found only once
// Redis or the configuration was asked.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// help prints the usage, or one command's help, on stdout.
func help(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printUsage(fs, stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(stderr, "pgw help: want at most one command, got %q\n", args)
		return exitUsage
	}
	text, ok := commandHelp[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "pgw help: unknown command %q (legal: status, open, close, reset, help)\n", args[0])
		return exitUsage
	}
	fmt.Fprint(stdout, text)
	if args[0] != "help" {
		fmt.Fprintln(stdout, "\nflags (before or after the command, or after its arguments):")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return exitOK
}
