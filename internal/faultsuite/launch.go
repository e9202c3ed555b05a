package faultsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Fleet is a set of running workers. Its methods are called from one
// goroutine.
type Fleet struct {
	procs []*proc
}

type proc struct {
	id     int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	msgs   chan message // closed at the end of the worker's stdout
	stderr *tail
	exited chan struct{}
	err    error // the process's exit, once exited is closed
}

// Launch starts n workers running spec — this very binary re-executed with
// WorkerEnv set, so the binary must call MaybeRunWorker first — and returns
// once every one has built its gateway and started its load. ctx bounds the
// start; Kill (or Close) ends the processes. A worker's stderr is kept for
// the errors that name it; with Spec.Verbose it is also copied to this
// process's stderr as it comes.
func Launch(ctx context.Context, n int, spec Spec) (*Fleet, error) {
	env, err := spec.encode()
	if err != nil {
		return nil, err
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("faultsuite: finding this binary to re-execute: %w", err)
	}
	f := &Fleet{}
	for id := range n {
		p := &proc{id: id, msgs: make(chan message, 4), stderr: &tail{max: 16 << 10}, exited: make(chan struct{})}
		p.cmd = exec.Command(bin, "-test.run=^$") // a test binary runs no test; MaybeRunWorker ignores it
		p.cmd.Env = append(os.Environ(), WorkerEnv+"="+env, workerIDEnv+"="+strconv.Itoa(id))
		p.cmd.Stderr = p.stderr
		if spec.Verbose {
			// What a verbose worker writes to its stderr is meant to be
			// read as it comes: copy it to this process's stderr too.
			p.cmd.Stderr = io.MultiWriter(p.stderr, os.Stderr)
		}
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			f.Kill()
			return nil, err
		}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			f.Kill()
			return nil, err
		}
		if err := p.cmd.Start(); err != nil {
			f.Kill()
			return nil, fmt.Errorf("faultsuite: start worker %d: %w", id, err)
		}
		f.procs = append(f.procs, p)
		go p.read(stdout)
	}
	for _, p := range f.procs {
		m, err := p.next(ctx)
		if err == nil && !m.Ready {
			err = fmt.Errorf("faultsuite: worker %d: expected ready, got %+v", p.id, m)
		}
		if err != nil {
			f.Kill()
			return nil, err
		}
	}
	return f, nil
}

// read decodes the worker's messages until its stdout ends, then reaps it.
func (p *proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // a report with many probes is long
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = message{Error: fmt.Sprintf("undecodable line %q: %v", truncate(sc.Text(), 200), err)}
		}
		p.msgs <- m
	}
	close(p.msgs)
	p.err = p.cmd.Wait()
	close(p.exited)
}

// next returns the worker's next message.
func (p *proc) next(ctx context.Context) (message, error) {
	select {
	case m, ok := <-p.msgs:
		if !ok {
			<-p.exited
			return message{}, fmt.Errorf("faultsuite: worker %d ended (%v); stderr:\n%s", p.id, p.err, p.stderr)
		}
		if m.Error != "" {
			return m, fmt.Errorf("faultsuite: worker %d: %s; stderr:\n%s", p.id, m.Error, p.stderr)
		}
		return m, nil
	case <-ctx.Done():
		return message{}, fmt.Errorf("faultsuite: worker %d did not answer: %w; stderr:\n%s", p.id, ctx.Err(), p.stderr)
	}
}

func (f *Fleet) send(cmd string) error {
	var errs []error
	for _, p := range f.procs {
		if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
			errs = append(errs, fmt.Errorf("faultsuite: worker %d: send %q: %w", p.id, cmd, err))
		}
	}
	return errors.Join(errs...)
}

// Stop makes every worker stop its load and returns once each has no call
// left running.
func (f *Fleet) Stop(ctx context.Context) error {
	if err := f.send(cmdStop); err != nil {
		return err
	}
	for _, p := range f.procs {
		m, err := p.next(ctx)
		if err != nil {
			return err
		}
		if !m.Stopped {
			return fmt.Errorf("faultsuite: worker %d: expected stopped, got %+v", p.id, m)
		}
	}
	return nil
}

// Phase makes every worker count the calls that end from now on under name
// (Report.Phases). name must be one word.
func (f *Fleet) Phase(name string) error { return f.send(cmdPhase + " " + name) }

// Capacity makes every worker hold n ScopeTool calls inside their attempts
// at once (after stopping its load) and returns how many got in, per worker.
func (f *Fleet) Capacity(ctx context.Context, n int) ([]int, error) {
	if err := f.send(cmdCapacity + " " + strconv.Itoa(n)); err != nil {
		return nil, err
	}
	got := make([]int, len(f.procs))
	for i, p := range f.procs {
		m, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		if m.Capacity == nil {
			return nil, fmt.Errorf("faultsuite: worker %d: expected a capacity, got %+v", p.id, m)
		}
		got[i] = *m.Capacity
	}
	return got, nil
}

// Close makes every worker stop, Close its gateway and report, and waits for
// the processes to exit. A worker that exits non-zero (a data race report,
// a crash) is an error carrying its stderr.
func (f *Fleet) Close(ctx context.Context) ([]Report, error) {
	if err := f.send(cmdClose); err != nil {
		return nil, err
	}
	reports := make([]Report, len(f.procs))
	var errs []error
	for i, p := range f.procs {
		m, err := p.next(ctx)
		if err == nil && m.Report == nil {
			err = fmt.Errorf("faultsuite: worker %d: expected a report, got %+v", p.id, m)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reports[i] = *m.Report
		select {
		case <-p.exited:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("faultsuite: worker %d did not exit: %w", p.id, ctx.Err()))
			continue
		}
		if p.err != nil {
			errs = append(errs, fmt.Errorf("faultsuite: worker %d exited: %w; stderr:\n%s", p.id, p.err, p.stderr))
		}
	}
	f.Kill()
	return reports, errors.Join(errs...)
}

// Kill ends every worker still running and waits for it. It is idempotent.
func (f *Fleet) Kill() {
	var wg sync.WaitGroup
	for _, p := range f.procs {
		_ = p.stdin.Close()
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range p.msgs { // drain, so that read reaches Wait
			}
			<-p.exited
		}()
	}
	wg.Wait()
}

// tail keeps the last max bytes written to it. Safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
