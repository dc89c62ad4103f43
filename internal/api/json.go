package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// encode writes v as JSON with the status. An encoding error can only be
// logged by the caller's middleware: the header is already sent.
func encode(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":"internal","message":"internal error","details":{}}}`+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// decode reads the request body as exactly one JSON value into v,
// refusing unknown fields, a wrong content type and trailing data.
func decode(r *http.Request, v any) error {
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err)
		}
		return httpErr(errBadRequest, "the request body has data after its JSON value")
	}
	return nil
}

func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return httpErr(errUnsupportedMedia, "the request body must be application/json")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return httpErr(errBodyTooLarge, fmt.Sprintf("the request body is over the %d byte limit", mbe.Limit))
	case errors.Is(err, io.EOF):
		return httpErr(errBadRequest, "the request body is empty; send a JSON object")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return httpErr(errBadRequest, "the request body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return httpErr(errBadRequest, fmt.Sprintf("the request body must be a JSON object, not %s", te.Value))
		}
		return httpErr(errBadRequest, fmt.Sprintf("field %s must not be %s", te.Field, te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return httpErr(errBadRequest, "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return httpErr(errBadRequest, "the request body could not be decoded")
}
