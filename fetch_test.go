package seglog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func openFds(t *testing.T) int {
	t.Helper()
	names, err := vfs.Default.List("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// TestFetchOverLoopback: a server answers fetch requests (an offset) with
// Read slices sent by WriteTo over loopback TCP; a client parses every
// batch with record/ and checks every record — while appends, segment
// rolls, removal of the oldest segments and truncation run concurrently.
// Afterwards no descriptor is left open.
func TestFetchOverLoopback(t *testing.T) {
	fdsBefore := openFds(t)
	dir := t.TempDir()
	fscktest.CheckCleanAtEnd(t, vfs.Default, dir)
	l, err := Open(dir, Options{LogConfig: LogConfig{SegmentBytes: 16 << 10, IndexIntervalBytes: 1024}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var serverWG sync.WaitGroup
	serverWG.Add(1)
	go func() { // the server: request = int64 offset; response = int32 length + slice bytes + trailer byte 1
		defer serverWG.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			serverWG.Add(1)
			go func(c net.Conn) {
				defer serverWG.Done()
				defer c.Close()
				var req [8]byte
				for {
					if _, err := io.ReadFull(c, req[:]); err != nil {
						return
					}
					off := int64(binary.BigEndian.Uint64(req[:]))
					resp := [4]byte{}
					s, err := l.Read(off, 8<<10, ReadOptions{})
					if err != nil {
						binary.BigEndian.PutUint32(resp[:], 0xFFFFFFFF) // out of range: retry
						c.Write(resp[:])
						continue
					}
					binary.BigEndian.PutUint32(resp[:], uint32(s.Len()))
					c.Write(resp[:])
					_, err = s.WriteTo(c)
					s.Close()
					if err != nil {
						// A truncation cut the slice, before the send (the
						// client sees EOF mid-response) or during it (the
						// bytes sent may be wrong): hang up either way,
						// and the client drops the response.
						if !errors.Is(err, ErrSliceTruncated) {
							t.Errorf("WriteTo: %v", err)
						}
						return
					}
					// The trailer vouches for the response: a client only
					// trusts a body followed by it.
					if _, err := c.Write([]byte{1}); err != nil {
						return
					}
				}
			}(conn)
		}
	}()

	var stop atomic.Bool
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // the writer: appends, rolls, retention and truncation
		defer bg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := l.Append(recordsAt(l.EndOffset(), 1+i%6)...); err != nil {
				t.Error(err)
				return
			}
			switch {
			case i%97 == 96:
				if err := l.TruncateTo(l.EndOffset() - 4); err != nil {
					t.Error(err)
					return
				}
			case i%151 == 150 && l.NumSegments() > 4:
				l.DeleteBefore(l.EndOffset() - 200)
			}
		}
	}()

	var clients sync.WaitGroup
	var checked, torn atomic.Int64
	for c := 0; c < 4; c++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			fetchClient(t, ln.Addr().String(), l, &checked, &torn)
		}()
	}
	clients.Wait()
	stop.Store(true)
	bg.Wait()
	ln.Close()
	serverWG.Wait()
	if checked.Load() < 1000 {
		t.Fatalf("clients checked only %d records", checked.Load())
	}
	t.Logf("%d records checked; %d responses torn by truncation and fetched again", checked.Load(), torn.Load())
	if st := l.SendStats(); st.SendfileBytes == 0 {
		t.Fatalf("no byte went through sendfile: %+v", st)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := openFds(t); after > fdsBefore {
		t.Fatalf("%d descriptors open after, %d before", after, fdsBefore)
	}
}

// fetchClient fetches forward from the log start until it has checked
// enough records; each record must hold the value written at its offset.
func fetchClient(t *testing.T, addr string, l *Log, checked, torn *atomic.Int64) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer func() { conn.Close() }()
	r := bufio.NewReader(conn)
	next := int64(0)
	var it record.Iterator
	for done := 0; done < 1500; {
		gen := l.truncations.current()
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], uint64(next))
		if _, err := conn.Write(req[:]); err != nil {
			t.Error(err)
			return
		}
		var resp [4]byte
		if _, err := io.ReadFull(r, resp[:]); err != nil {
			conn.Close() // the server hung up on a truncated slice
			if conn, err = net.Dial("tcp", addr); err != nil {
				t.Error(err)
				return
			}
			r = bufio.NewReader(conn)
			continue
		}
		n := binary.BigEndian.Uint32(resp[:])
		if n == 0xFFFFFFFF { // out of range: start over from the log start
			next = l.StartOffset()
			continue
		}
		buf := make([]byte, n+1) // the body and the trailer
		if _, err := io.ReadFull(r, buf); err != nil || buf[n] != 1 {
			// The server hangs up on a response whose slice was truncated
			// under it; what was received is dropped and the fetch retried.
			conn.Close()
			if conn, err = net.Dial("tcp", addr); err != nil {
				t.Error(err)
				return
			}
			r = bufio.NewReader(conn)
			continue
		}
		buf = buf[:n]
		// parse checks the response; it reports a batch that fails to parse
		// rather than failing the test, because bytes handed to sendfile go
		// by reference: a truncation that cuts them after WriteTo returned
		// (zeroing the page, or writing new batches over it) changes what
		// the peer receives. Kafka never truncates what it serves below the
		// high watermark; this test truncates under the readers on purpose,
		// so such a response is only excused when a truncation happened.
		bad := func() bool {
			for len(buf) > 0 {
				size, _, err := record.PeekEntry(buf)
				if err != nil || size > len(buf) {
					return true
				}
				b := record.Batch(buf[:size])
				if b.Validate() != nil || it.Reset(b) != nil {
					return true
				}
				for it.Next() {
					rec := it.Record()
					if rec.Offset >= next {
						if !sameBytes(rec.Value, crashValue(rec.Offset, len(rec.Value))) {
							t.Errorf("offset %d: a valid batch holds a wrong value", rec.Offset)
							return false
						}
						checked.Add(1)
						done++
					}
				}
				if it.Err() != nil {
					return true
				}
				next = max(next, b.NextOffset())
				buf = buf[size:]
			}
			return false
		}()
		if bad {
			// Wait out a truncation in progress, then require one.
			l.mu.Lock()
			//lint:ignore SA2001 an empty critical section waits for the writer
			l.mu.Unlock()
			if l.truncations.current() == gen {
				t.Errorf("response from offset %d does not parse, and no truncation explains it", next)
				return
			}
			torn.Add(1)
		}
	}
}
