package examples

import "testing"

// recipes are the cookbook's, in the page's order.
var recipes = []recipe{
	{name: "sensor-counts", run: func(t *testing.T, r *recipe, root string) map[string][]byte {
		r.weir(t, root, "run", "examples/sensor-counts/job.yaml")
		return map[string][]byte{"counts.txt": r.sqlite(t, root, "examples/sensor-counts/out/counts.db",
			"SELECT sensor, window_start, readings, mean, revision, status FROM counts ORDER BY sensor, window_start")}
	}},
	{name: "sensor-counts-postgres", run: sensorCountsPostgres},
	{name: "sessions"},
	{name: "sliding-average", run: func(t *testing.T, r *recipe, root string) map[string][]byte {
		r.weir(t, root, "run", "examples/sliding-average/job.yaml")
		return map[string][]byte{"averages.txt": r.sqlite(t, root, "examples/sliding-average/out/averages.db",
			"SELECT window_start, window_end, readings, avg_celsius, revision FROM averages ORDER BY window_start")}
	}},
	{name: "dedup"},
	{name: "filters"},
	{name: "percentiles-top"},
	{name: "two-aggregations"},
	{name: "unpaid-orders"},
	{name: "card-limits"},
	{name: "spend-lookup", run: func(t *testing.T, r *recipe, root string) map[string][]byte {
		r.weir(t, root, "run", "examples/spend-lookup/job.yaml")
		spend := r.sqlite(t, root, "examples/spend-lookup/out/spend.db", "SELECT card, window_start, orders, spent FROM spend ORDER BY card, window_start")
		r.weir(t, root, "run", "examples/spend-lookup/lookup.yaml")
		return map[string][]byte{"spend.txt": spend}
	}},
	{name: "clicks-per-window"},
	{name: "parquet-lake", run: parquetLake},
	{name: "how-late", run: func(t *testing.T, r *recipe, root string) map[string][]byte {
		report := r.weir(t, root, "lateness", "--by", "platform", "--delays", "none,2s,10s,1m,2m", "examples/how-late/taps.jsonl")
		r.weir(t, root, "run", "examples/how-late/job.yaml")
		return map[string][]byte{"lateness.txt": report}
	}},
	{name: "late-and-reconcile", run: func(t *testing.T, r *recipe, root string) map[string][]byte {
		const db, query = "examples/late-and-reconcile/out/orders.db",
			"SELECT shop, window_start, orders, amount, revision, status, reason FROM orders ORDER BY window_start"
		r.weir(t, root, "run", "examples/late-and-reconcile/job.yaml")
		before := r.sqlite(t, root, db, query)
		report := r.weir(t, root, "reconcile", "--ledger", "examples/late-and-reconcile/orders.jsonl",
			"--ledger", "examples/late-and-reconcile/out/late.jsonl", "--reason", "nightly ledger", "--report", "examples/late-and-reconcile/job.yaml")
		return map[string][]byte{"before.txt": before, "reconcile.txt": report, "after.txt": r.sqlite(t, root, db, query)}
	}},
	{name: "follow-log", run: followLog},
	{name: "kafka-exactly-once", run: kafkaExactlyOnce},
	{name: "consumer-group", run: consumerGroup},
	{name: "avro-registry", run: avroRegistry},
	{name: "mqtt-input", run: mqttInput},
	{name: "webhook-alerts", run: webhookAlerts},
}
