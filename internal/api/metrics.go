package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

// metrics are memoryd's Prometheus collectors.
type metrics struct {
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	toolCalls *prometheus.CounterVec
}

// newMetrics registers memoryd's collectors in reg.
func newMetrics(reg *prometheus.Registry, svc *memory.Service) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memoryd_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memoryd_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memoryd_tool_calls_total", Help: "Tool calls by tool and result code.",
		}, []string{"tool", "code"}),
	}
	v := version.Get()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "memoryd_build_info", Help: "Always 1: which memoryd this is, in its labels.",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion},
	})
	build.Set(1)
	reg.MustRegister(m.requests, m.durations, m.toolCalls, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if svc != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "memoryd_log_position", Help: "Position of the newest event in the log.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			p, err := svc.LastPosition(ctx)
			if err != nil {
				return -1
			}
			return float64(p)
		}))
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "memoryd_note_cache_hits_total", Help: "Note reads answered from memory (nothing committed since the same read queried SQLite).",
		}, func() float64 {
			h, _ := svc.NoteCacheStats()
			return float64(h)
		}), prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "memoryd_note_cache_misses_total", Help: "Note reads that queried SQLite.",
		}, func() float64 {
			_, m := svc.NoteCacheStats()
			return float64(m)
		}))
	}
	return m
}

// observe counts one request and its duration.
func (m *metrics) observe(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.durations.WithLabelValues(route).Observe(d.Seconds())
}

// handleMetrics handles "GET /metrics".
func handleMetrics(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
