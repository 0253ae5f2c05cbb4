package main

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// input hands produce the bytes of its input while watching for SIGINT and
// SIGTERM, so that a signal never costs a byte that was already read, and
// so that a slow input can be waited on with a deadline (--linger).
//
// A pipe, socket or terminal may block for ever, so it is read on its own
// goroutine (a pump) that waits in poll(2) and reads only what is ready:
// on a signal the pump stops, hands over what it read, then reads what the
// input already held when the signal came (FIONREAD) and no more. A regular
// file or an in-memory reader never blocks, so it is read in line and the
// signal is checked between reads.
type input struct {
	r       io.Reader
	sigs    chan os.Signal
	sig     os.Signal // the signal that stopped the reading, once one has
	buf     []byte    // the in-line reader's buffer
	readErr error     // an error the in-line reader got along with data
	pump    *pump     // nil when the input is read in line
	last    []byte    // the pump's chunk returned by the previous next
	rest    []byte    // what Read has not yet returned of the last chunk
}

// event says what next returned.
type event int

const (
	evData   event = iota // bytes were read
	evLinger              // the linger deadline passed first
	evSignal              // a signal came and everything read before it has been returned
	evEnd                 // the input ended: io.EOF, or the read error
)

// chunkSize is how much one read takes from the input.
const chunkSize = 64 << 10

// newInput starts watching for SIGINT and SIGTERM and prepares r to be
// read. Close it when done.
func newInput(r io.Reader) *input {
	in := &input{r: r, sigs: make(chan os.Signal, 1)}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	if f, ok := r.(*os.File); ok && mayBlock(f) {
		if p, err := startPump(f); err == nil {
			in.pump = p
			return in
		}
		// Without a pump a blocked read could not be interrupted; reading
		// in line still stores everything once the input ends.
	}
	in.buf = make([]byte, chunkSize)
	return in
}

// mayBlock reports whether a read of f can wait for a writer: anything but
// a regular file.
func mayBlock(f *os.File) bool {
	fi, err := f.Stat()
	return err != nil || !fi.Mode().IsRegular()
}

// signaled reports the signal that stopped the input, or nil.
func (in *input) signaled() os.Signal { return in.sig }

// next returns the next bytes read, valid until the following call, or
// why there are none. linger, when not nil, bounds the wait for a pump's
// input; an input read in line never waits, so it never reports evLinger.
// After evSignal or evEnd every later call returns the same.
func (in *input) next(linger <-chan time.Time) ([]byte, event, error) {
	if in.pump != nil {
		return in.nextPumped(linger)
	}
	if in.readErr != nil {
		return nil, evEnd, in.readErr
	}
	if in.sig == nil {
		select {
		case s := <-in.sigs:
			in.stopSignals(s)
		default:
		}
	}
	if in.sig != nil {
		return nil, evSignal, nil
	}
	for {
		n, err := in.r.Read(in.buf)
		if n > 0 {
			in.readErr = err
			return in.buf[:n], evData, nil
		}
		if err != nil {
			in.readErr = err
			return nil, evEnd, err
		}
	}
}

func (in *input) nextPumped(linger <-chan time.Time) ([]byte, event, error) {
	p := in.pump
	if in.last != nil {
		select {
		case p.free <- in.last[:cap(in.last)]:
		default:
		}
		in.last = nil
	}
	var c []byte
	var ok bool
	if in.sig != nil {
		c, ok = <-p.chunks
	} else {
		select {
		case c, ok = <-p.chunks:
		case <-linger:
			return nil, evLinger, nil
		case s := <-in.sigs:
			in.stopSignals(s)
			p.stop()
			c, ok = <-p.chunks
		}
	}
	switch {
	case ok:
		in.last = c
		return c, evData, nil
	case in.sig != nil:
		return nil, evSignal, nil
	default:
		return nil, evEnd, p.err
	}
}

// stopSignals records s and gives SIGINT and SIGTERM their default action
// back, so a second Ctrl-C ends a command that is stuck storing.
func (in *input) stopSignals(s os.Signal) {
	in.sig = s
	signal.Stop(in.sigs)
}

// Read makes the input an io.Reader for the batch framing: a signal ends
// it with errInterrupted once everything read before it was returned.
func (in *input) Read(p []byte) (int, error) {
	for len(in.rest) == 0 {
		c, ev, err := in.next(nil)
		switch ev {
		case evSignal:
			return 0, errInterrupted
		case evEnd:
			return 0, err
		}
		in.rest = c
	}
	n := copy(p, in.rest)
	in.rest = in.rest[n:]
	return n, nil
}

// errInterrupted ends the input's Read after a signal.
var errInterrupted = errors.New("interrupted")

// Close stops watching for signals and stops the pump, if any.
func (in *input) Close() {
	signal.Stop(in.sigs)
	if p := in.pump; p != nil {
		p.stop()
		for range p.chunks {
		}
		p.closeWake()
	}
}

// pump reads a descriptor that may block on its own goroutine.
type pump struct {
	f      *os.File
	fd     int
	wakeR  int // poll(2) watches it beside fd; a byte written to wakeW stops the pump
	wakeW  int
	chunks chan []byte // bytes read, in order; closed after the last
	free   chan []byte // chunks handed back for reuse
	err    error       // what ended the reading; set before chunks closes
}

func startPump(f *os.File) (*pump, error) {
	p := &pump{f: f, chunks: make(chan []byte, 4), free: make(chan []byte, 5)}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	// f.Fd would switch a pollable file to blocking mode; the raw
	// descriptor is only used while f stays open, for the command's run.
	if err := rc.Control(func(fd uintptr) { p.fd = int(fd) }); err != nil {
		return nil, err
	}
	var w [2]int
	if err := unix.Pipe2(w[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	p.wakeR, p.wakeW = w[0], w[1]
	go p.run()
	return p, nil
}

// stop asks the pump to hand over what the input holds now and end. It
// may be called more than once.
func (p *pump) stop() {
	// The pipe is non-blocking: once one byte is in it, a full pipe
	// changes nothing.
	_, _ = unix.Write(p.wakeW, []byte{0})
}

func (p *pump) closeWake() {
	unix.Close(p.wakeR)
	unix.Close(p.wakeW)
}

func (p *pump) buffer() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return make([]byte, chunkSize)
	}
}

func (p *pump) run() {
	defer close(p.chunks)
	for {
		ready, err := p.wait()
		if err != nil {
			p.err = err
			return
		}
		if !ready {
			p.drain()
			return
		}
		if _, ok := p.read(chunkSize); !ok {
			return
		}
	}
}

// wait blocks until the input can be read without blocking (true) or the
// pump is stopped (false). A stop wins over ready input: what the input
// holds then is taken by drain, which bounds it.
func (p *pump) wait() (bool, error) {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}, {Fd: int32(p.wakeR), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if fds[1].Revents != 0 {
			return false, nil
		}
		if fds[0].Revents != 0 {
			// POLLHUP or POLLERR too: the read reports the end or error.
			return true, nil
		}
	}
}

// read reads at most max bytes and hands them over; false when the input
// ended (p.err set).
func (p *pump) read(max int) (int, bool) {
	b := p.buffer()
	n, err := p.f.Read(b[:max])
	if n > 0 {
		p.chunks <- b[:n]
	}
	if err != nil {
		p.err = err
		return n, false
	}
	return n, true
}

// drain reads what the input held when the pump was stopped (FIONREAD,
// which Linux names TIOCINQ): bytes written before the signal are stored,
// a writer that keeps writing is not followed.
func (p *pump) drain() {
	left, err := unix.IoctlGetInt(p.fd, unix.TIOCINQ) // FIONREAD
	if err != nil {
		return
	}
	for left > 0 {
		n, ok := p.read(min(left, chunkSize))
		if !ok || n == 0 {
			return
		}
		left -= n
	}
}
