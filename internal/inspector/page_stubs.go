package inspector

import "net/http"

func (in *Inspector) historyPage(w http.ResponseWriter, r *http.Request) {
	in.renderError(w, r, http.StatusNotFound, "not yet")
}
