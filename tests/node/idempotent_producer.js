// Produce ids 0..count-1 with KafkaJS's idempotent producer to each topic
// named on the command line: id i goes to partition i % partitions, its
// value the decimal id. Every sendBatch carries all the topics at once (one
// Produce request packs them, as KafkaJS does). The Rust test reads the
// topics back and checks every id is stored exactly once, in order.
//
//   node idempotent_producer.js BOOTSTRAP PARTITIONS COUNT TOPIC...
//
// Prints "OK <count>" and exits 0 when every batch was acknowledged; exits 1
// with the error otherwise. Bounded by a 120 s timer.
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [bootstrap, partitionsArg, countArg, ...topics] = process.argv.slice(2);
  const partitions = Number(partitionsArg);
  const count = Number(countArg);
  const kafka = new Kafka({ clientId: 'ferrolog-test', brokers: [bootstrap], logLevel: logLevel.WARN });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const chunk = 100;
  for (let start = 0; start < count; start += chunk) {
    const messages = [];
    for (let i = start; i < Math.min(count, start + chunk); i++) {
      messages.push({ value: String(i), partition: i % partitions });
    }
    await producer.sendBatch({
      acks: -1,
      topicMessages: topics.map((topic) => ({ topic, messages })),
    });
  }
  await producer.disconnect();
  console.log(`OK ${count}`);
}

const timer = setTimeout(() => {
  console.log('FAILED: timed out');
  process.exit(1);
}, 120000);
main()
  .then(() => clearTimeout(timer))
  .catch((e) => {
    console.log(`FAILED: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
