// Metrics made once per registry. One registry may serve several apps (tests, a restart in
// place): a metric it already holds is used again, never registered twice (prom-client throws).
import { Counter, type CounterConfiguration, Histogram, type HistogramConfiguration, type Registry } from 'prom-client';

export function counterIn<L extends string>(registry: Registry, config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  return (registry.getSingleMetric(config.name) as Counter<L> | undefined) ?? new Counter({ ...config, registers: [registry] });
}

export function histogramIn<L extends string>(registry: Registry, config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
  return (registry.getSingleMetric(config.name) as Histogram<L> | undefined) ?? new Histogram({ ...config, registers: [registry] });
}
