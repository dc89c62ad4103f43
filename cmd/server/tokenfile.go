package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
)

// secretFile is a secret memoryd keeps in a private file beside the
// database (or in the default data folder for a database on a server),
// made with 32 random bytes on first use, unless its variable gives it.
type secretFile struct {
	env, name, what string
	// irreplaceable says that a new secret does not replace a lost one:
	// what it keeps cannot be read without it.
	irreplaceable bool
}

var (
	// tokenFile is the bearer token of the API.
	tokenFile = secretFile{env: "MEMORYD_TOKEN", name: "token", what: "token"}
	// redactionKeyFile keys the digests of redaction's markers
	// (docs/redaction.md): stable for the database, as an entry sent
	// again must redact to the bytes stored, and apart from the token,
	// which may be replaced.
	redactionKeyFile = secretFile{env: "MEMORYD_REDACT_KEY", name: "redact.key", what: "redaction key"}
)

// loadToken returns MEMORYD_TOKEN, else the token file beside the
// database, which it creates with a random token on first start.
func loadToken(getenv func(string) string, dbPath string) (string, error) {
	return loadSecret(getenv, dbPath, tokenFile)
}

// loadSecret returns the secret's variable, else its file beside the
// database, which it creates with a random secret on first use.
func loadSecret(getenv func(string) string, dbPath string, sf secretFile) (string, error) {
	if t := getenv(sf.env); t != "" {
		return t, nil
	}
	file, ok := memory.ParseLocation(dbPath).File()
	dir := filepath.Dir(file)
	if !ok { // the token file goes in the default data folder
		var err error
		if dir, err = defaultDataDir(getenv); err != nil {
			return "", fmt.Errorf("the %s of a database on a server is kept in memoryd's data folder, and there is none (%v): set %s, or HOME", sf.what, err, sf.env)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("create the %s's folder: %w", sf.what, err)
		}
	}
	path := filepath.Join(dir, sf.name)
	b, err := readTokenFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%s file %s is empty; delete it to have a new one made", sf.what, path)
	}
	var unsafe *unsafeTokenFileError
	if errors.As(err, &unsafe) {
		unsafe.secret = sf
		return "", err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the %s file: %w", sf.what, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	switch err := createTokenFile(path, token); {
	case errors.Is(err, fs.ErrExist): // another process made it first, whole
		return loadSecret(getenv, dbPath, sf)
	case err != nil:
		return "", fmt.Errorf("create the %s file: %w", sf.what, err)
	}
	return token, nil
}

// createTokenFile writes token to a new file at path, whole or not at all,
// so two memoryds starting at once never read a token file half written.
func createTokenFile(path, token string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(token + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Linking fails with fs.ErrExist when path is there already, even as a
	// symbolic link.
	if err = os.Link(tmp, path); err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// On a filesystem without hard links, create it in place. O_EXCL never
	// opens a file or a symbolic link that is there already.
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readTokenFile reads the token file at path through openTokenFile.
func readTokenFile(path string) ([]byte, error) {
	f, err := openTokenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// unsafeTokenFileError is a token file memoryd will not trust, as ssh will
// not use a private key others can read.
type unsafeTokenFileError struct {
	path    string
	problem string // what is wrong with it, after the file's name
	fix     string
	secret  secretFile // the token's unless set
}

func (e *unsafeTokenFileError) Error() string {
	sf := e.secret
	if sf.name == "" {
		sf = tokenFile
	}
	fix := e.fix
	if sf.irreplaceable && strings.HasPrefix(fix, "rm ") {
		fix = "make it a regular file of yours (chown, chmod 600), or move it away and set " + sf.env + " to its content; do not delete it: what it encrypts cannot be read without it"
	}
	return fmt.Sprintf("refusing the %s file %s: it %s; like an ssh private key, it must be yours and accessible to no one else; fix: %s, or set %s",
		sf.what, e.path, e.problem, fix, sf.env)
}

// tokenFileNotOurs is the refusal of a token file memoryd did not make.
func tokenFileNotOurs(path, problem string) error {
	return &unsafeTokenFileError{path: path, problem: problem, fix: "rm " + path + " (a new one is made at the next start)"}
}
