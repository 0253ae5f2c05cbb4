package sendfile

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// A bytes.Buffer is not a descriptor: SendFile must decline without writing,
// and Copy must deliver the range by the fallback.
func TestFallbackNonSocketWriter(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	var s Sender
	var buf bytes.Buffer

	written, handled, err := s.SendFile(&buf, src, 10, 1000)
	if handled || written != 0 || err != nil || buf.Len() != 0 {
		t.Fatalf("SendFile to bytes.Buffer = (%d, %v, %v), %d bytes buffered; want a clean decline", written, handled, err, buf.Len())
	}

	for _, r := range []struct{ off, n int64 }{
		{0, fixtureSize},
		{1, copyBufSize + 1}, // crosses a fallback buffer boundary
		{fixtureSize - 1, 1},
		{12345, 0},
	} {
		buf.Reset()
		before := s.Stats()
		written, err := s.Copy(&buf, src, r.off, r.n)
		if err != nil || written != r.n {
			t.Fatalf("Copy(off=%d, n=%d) = %d, %v", r.off, r.n, written, err)
		}
		if !bytes.Equal(buf.Bytes(), data[r.off:r.off+r.n]) {
			t.Fatalf("Copy(off=%d, n=%d) delivered different bytes", r.off, r.n)
		}
		d := s.Stats().Sub(before)
		if d.SendfileBytes != 0 || d.SendfileCalls != 0 || d.CopyBytes != r.n {
			t.Fatalf("Copy(off=%d, n=%d) stats %+v: want all bytes by copy, no sendfile call", r.off, r.n, d)
		}
	}
}

// A source without a descriptor goes through ReadAt even to a TCP socket.
func TestFallbackSourceWithoutFd(t *testing.T) {
	_, data := fixture(t, fixtureSize)
	src := memSource{bytes.NewReader(data)}
	snd, rcv := tcpPair(t)
	var s Sender

	const off, n = 777, 2*DefaultChunkSize + 3
	got := receive(rcv, n)
	written, err := s.Copy(snd, src, off, n)
	if err != nil || written != n {
		t.Fatalf("Copy = %d, %v", written, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileCalls != 0 || st.Declined != 1 || st.CopyBytes != n {
		t.Fatalf("stats %+v: want one decline and every byte copied", st)
	}
}

// A range running past the end of the source delivers what exists, then an
// error wrapping io.ErrUnexpectedEOF that says where it stopped.
func TestFallbackShortSource(t *testing.T) {
	_, data := fixture(t, 4096)
	src := memSource{bytes.NewReader(data)}
	var s Sender
	var buf bytes.Buffer
	written, err := s.Copy(&buf, src, 4000, 500)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "copy" || e.Off != 4096 {
		t.Fatalf("err = %#v, want *Error{Op: copy, Off: 4096}", err)
	}
	if written != 96 || !bytes.Equal(buf.Bytes(), data[4000:]) {
		t.Fatalf("written %d (%d buffered), want the 96 bytes the source has", written, buf.Len())
	}
}

// A range ending exactly at the end of the file is not short, even though
// ReadAt may report io.EOF with the last bytes.
func TestFallbackRangeToEndOfFile(t *testing.T) {
	_, data := fixture(t, 1000)
	var buf bytes.Buffer
	if _, err := (&Sender{}).Copy(&buf, memSource{bytes.NewReader(data)}, 0, 1000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data) {
		t.Fatal("bytes differ")
	}
}

// failingWriter accepts limit bytes, then fails.
type failingWriter struct {
	limit int
	buf   bytes.Buffer
}

var errWriterFull = errors.New("test: writer full")

func (w *failingWriter) Write(p []byte) (int, error) {
	room := w.limit - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:room])
		return room, errWriterFull
	}
	return w.buf.Write(p)
}

// The writer's error surfaces wrapped, with the count of bytes it took.
func TestFallbackWriterError(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	w := &failingWriter{limit: copyBufSize + 10}
	written, err := (&Sender{}).Copy(w, src, 5, fixtureSize-5)
	if !errors.Is(err, errWriterFull) {
		t.Fatalf("err = %v, want the writer's error", err)
	}
	if written != int64(w.limit) || !bytes.Equal(w.buf.Bytes(), data[5:5+w.limit]) {
		t.Fatalf("written = %d, want %d matching bytes", written, w.limit)
	}
	var e *Error
	if !errors.As(err, &e) || e.Off != 5+int64(w.limit) {
		t.Fatalf("err = %v, want *Error at offset %d", err, 5+w.limit)
	}
}

func TestInvalidRange(t *testing.T) {
	src, _ := fixture(t, 100)
	snd, _ := tcpPair(t)
	for _, r := range []struct{ off, n int64 }{
		{-1, 10},
		{0, -1},
		{math.MaxInt64, 1},
		{1, math.MaxInt64},
	} {
		var buf bytes.Buffer
		var s Sender
		if w, err := s.Copy(&buf, src, r.off, r.n); !errors.Is(err, ErrInvalidRange) || w != 0 || buf.Len() != 0 {
			t.Errorf("Copy(bytes.Buffer, off=%d, n=%d) = %d, %v; want ErrInvalidRange and nothing written", r.off, r.n, w, err)
		}
		if w, handled, err := s.SendFile(snd, src, r.off, r.n); !errors.Is(err, ErrInvalidRange) || !handled || w != 0 {
			t.Errorf("SendFile(tcp, off=%d, n=%d) = %d, %v, %v; want handled ErrInvalidRange", r.off, r.n, w, handled, err)
		}
		if st := s.Stats(); st != (Stats{}) {
			t.Errorf("invalid range moved something: %+v", st)
		}
	}
}

// The package-level functions share one Sender whose counters DefaultStats
// reports.
func TestPackageFunctionsCount(t *testing.T) {
	src, data := fixture(t, 5000)
	var buf bytes.Buffer
	before := DefaultStats()
	if _, handled, _ := SendFile(&buf, src, 0, 10); handled {
		t.Fatal("SendFile to a bytes.Buffer handled")
	}
	if n, err := Copy(&buf, src, 100, 4000); err != nil || n != 4000 || !bytes.Equal(buf.Bytes(), data[100:4100]) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	if d := DefaultStats().Sub(before); d.Declined != 2 || d.CopyBytes != 4000 {
		t.Fatalf("DefaultStats delta %+v, want 2 declines and 4000 copied bytes", d)
	}
}
