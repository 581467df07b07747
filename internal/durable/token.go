package durable

import (
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The continuation token, version 1. Its bytes, base64url-encoded without
// padding, are:
//
//	version    1 byte   (1)
//	flags      1 byte   (flagStored: the state is in the server's store;
//	                     flagPending: the pending calls follow the tenant)
//	key id     1 byte length + bytes (1–64)
//	pause id   16 bytes (random; the AES-CTR IV, the store key, the single-use key)
//	issued     8 bytes  (Unix seconds, big-endian)
//	expires    8 bytes  (Unix seconds, big-endian)
//	tenant     uvarint length + bytes (≤ 256)
//	pending    with flagPending: uvarint length + bytes (≤ maxPendingBytes),
//	           the calls the state waits for (see pending.go), in clear
//	body       inline: AES-256-CTR(flate(state)) up to the MAC
//	           stored: the SHA-256 of the stored body (32 bytes)
//	mac        32 bytes: HMAC-SHA256 over everything before it
//
// The pending calls are signed but not encrypted: they are what the pause
// answered its caller with (call ids and tool names), and they let a Resume
// whose answers do not fit be refused without reading the state. A token
// without flagPending (issued before it existed, or whose pending calls do
// not fit) is read as before: its answers are checked against the state.
//
// The encryption and MAC keys are derived from the key's secret with
// HMAC-SHA256 under distinct labels, so a secret is never used directly.
const (
	version     = 1
	flagStored  = 1
	flagPending = 2
	pauseIDLen  = 16
	macLen      = sha256.Size
	// MaxKeyIDLength bounds a key id.
	MaxKeyIDLength = 64
	// MinSecretBytes is the shortest secret a key may have.
	MinSecretBytes = 32
	maxTenantLen   = 256
)

// Key signs and encrypts continuations.
type Key struct {
	// ID names the key inside every token it signs (for rotation).
	ID string
	// Secret is at least MinSecretBytes bytes of high entropy.
	Secret []byte
}

// derived are a key's working keys.
type derived struct {
	id       string
	mac, enc []byte
}

func derive(k Key) (derived, error) {
	if k.ID == "" || len(k.ID) > MaxKeyIDLength {
		return derived{}, fmt.Errorf("key id %q: use 1 to %d characters", k.ID, MaxKeyIDLength)
	}
	for i := 0; i < len(k.ID); i++ {
		if c := k.ID[i]; c <= ' ' || c > '~' {
			return derived{}, fmt.Errorf("key id %q: use printable ASCII without spaces", k.ID)
		}
	}
	if len(k.Secret) < MinSecretBytes {
		return derived{}, fmt.Errorf("key %q: the secret is %d bytes; use at least %d random bytes", k.ID, len(k.Secret), MinSecretBytes)
	}
	label := func(s string) []byte {
		m := hmac.New(sha256.New, k.Secret)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	return derived{id: k.ID, mac: label("ptc continuation v1 mac"), enc: label("ptc continuation v1 encryption")}, nil
}

// header is a token without its body and MAC.
type header struct {
	stored  bool
	keyID   string
	pauseID [pauseIDLen]byte
	issued  time.Time
	expires time.Time
	tenant  string
	// pending is the encoded pending calls (encodePending), nil when the
	// token does not carry them.
	pending []byte
}

// errMalformed is wrapped by every parse failure.
var errMalformed = errors.New("malformed")

// seal builds a token: inline (body is the compressed state) or a
// reference to a stored body (digest).
func seal(k derived, h header, body []byte, digest []byte) string {
	var b bytes.Buffer
	b.WriteByte(version)
	flags := byte(0)
	if h.stored {
		flags |= flagStored
	}
	if h.pending != nil {
		flags |= flagPending
	}
	b.WriteByte(flags)
	b.WriteByte(byte(len(k.id)))
	b.WriteString(k.id)
	b.Write(h.pauseID[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(h.issued.Unix()))
	b.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(h.expires.Unix()))
	b.Write(n[:])
	b.Write(binary.AppendUvarint(nil, uint64(len(h.tenant))))
	b.WriteString(h.tenant)
	if h.pending != nil {
		b.Write(binary.AppendUvarint(nil, uint64(len(h.pending))))
		b.Write(h.pending)
	}
	if h.stored {
		b.Write(digest)
	} else {
		b.Write(body)
	}
	m := hmac.New(sha256.New, k.mac)
	m.Write(b.Bytes())
	b.Write(m.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

// parse splits a token into its header, its body (or digest) and the
// signed bytes with their MAC, without verifying anything.
func parse(tok string) (h header, body, signed, mac []byte, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return h, nil, nil, nil, fmt.Errorf("%w: not base64url text", errMalformed)
	}
	r := raw
	need := func(n int) ([]byte, error) {
		if len(r) < n {
			return nil, fmt.Errorf("%w: it ends early", errMalformed)
		}
		v := r[:n]
		r = r[n:]
		return v, nil
	}
	v, err := need(3)
	if err != nil {
		return h, nil, nil, nil, err
	}
	if v[0] != version {
		return h, nil, nil, nil, fmt.Errorf("%w: version %d is not one this server reads", errMalformed, v[0])
	}
	if v[1]&^(flagStored|flagPending) != 0 {
		return h, nil, nil, nil, fmt.Errorf("%w: unknown flags", errMalformed)
	}
	h.stored = v[1]&flagStored != 0
	if v[2] == 0 || v[2] > MaxKeyIDLength {
		return h, nil, nil, nil, fmt.Errorf("%w: bad key id length", errMalformed)
	}
	id, err := need(int(v[2]))
	if err != nil {
		return h, nil, nil, nil, err
	}
	h.keyID = string(id)
	pid, err := need(pauseIDLen + 16)
	if err != nil {
		return h, nil, nil, nil, err
	}
	copy(h.pauseID[:], pid)
	h.issued = time.Unix(int64(binary.BigEndian.Uint64(pid[pauseIDLen:])), 0).UTC()
	h.expires = time.Unix(int64(binary.BigEndian.Uint64(pid[pauseIDLen+8:])), 0).UTC()
	tl, n := binary.Uvarint(r)
	if n <= 0 || tl > maxTenantLen {
		return h, nil, nil, nil, fmt.Errorf("%w: bad tenant length", errMalformed)
	}
	r = r[n:]
	t, err := need(int(tl))
	if err != nil {
		return h, nil, nil, nil, err
	}
	h.tenant = string(t)
	if v[1]&flagPending != 0 {
		pl, n := binary.Uvarint(r)
		if n <= 0 || pl > maxPendingBytes {
			return h, nil, nil, nil, fmt.Errorf("%w: bad pending calls length", errMalformed)
		}
		r = r[n:]
		if h.pending, err = need(int(pl)); err != nil {
			return h, nil, nil, nil, err
		}
	}
	if len(r) < macLen {
		return h, nil, nil, nil, fmt.Errorf("%w: it ends early", errMalformed)
	}
	body = r[:len(r)-macLen]
	if h.stored && len(body) != sha256.Size {
		return h, nil, nil, nil, fmt.Errorf("%w: a stored state's reference has no digest", errMalformed)
	}
	return h, body, raw[:len(raw)-macLen], raw[len(raw)-macLen:], nil
}

// verify checks a token's MAC with k.
func verify(k derived, signed, mac []byte) bool {
	m := hmac.New(sha256.New, k.mac)
	m.Write(signed)
	return hmac.Equal(m.Sum(nil), mac)
}

// writers and readers keep flate's state between uses (a writer holds
// about a megabyte).
var (
	writers = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.DefaultCompression); return w }}
	readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// encrypt compresses and encrypts a state's encoding (AES-256-CTR, the
// pause id as IV).
func encrypt(k derived, pauseID [pauseIDLen]byte, plain []byte) ([]byte, error) {
	var z bytes.Buffer
	z.Grow(len(plain)/3 + 64)
	w := writers.Get().(*flate.Writer)
	defer writers.Put(w)
	w.Reset(&z)
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out := z.Bytes()
	ctr(k, pauseID, out)
	return out, nil
}

// decrypt reverses encrypt, reading at most max bytes of state.
func decrypt(k derived, pauseID [pauseIDLen]byte, body []byte, max int) ([]byte, error) {
	buf := append([]byte(nil), body...)
	ctr(k, pauseID, buf)
	r := readers.Get().(io.ReadCloser)
	defer readers.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(buf), nil); err != nil {
		return nil, fmt.Errorf("%w: the state does not decompress", errMalformed)
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: the state does not decompress", errMalformed)
	}
	if len(out) > max {
		return nil, fmt.Errorf("%w: the state is larger than %d bytes", errMalformed, max)
	}
	return out, nil
}

func ctr(k derived, iv [pauseIDLen]byte, b []byte) {
	block, err := aes.NewCipher(k.enc)
	if err != nil {
		panic(err) // the derived key is always 32 bytes
	}
	cipher.NewCTR(block, iv[:]).XORKeyStream(b, b)
}
