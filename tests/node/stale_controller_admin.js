// KafkaJS's admin client creating a topic while its metadata names an old
// controller, for tests/cluster.rs.
//
//   node stale_controller_admin.js BOOTSTRAP TOPIC
//
// Learns the controller, prints "READY <id>", waits for a line on stdin
// (the test moves the controller meanwhile), then creates TOPIC (1
// partition, replication factor 2). Prints "OK <topic>", or "FAILED:
// <error>" and exits 1. Bounded by a 120 s timer.
const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [bootstrap, topic] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: 'stale-controller-admin', brokers: [bootstrap], logLevel: logLevel.WARN });
  const admin = kafka.admin();
  await admin.connect();
  const cluster = await admin.describeCluster();
  console.log(`READY ${cluster.controller}`);
  const lines = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once('line', resolve));
  lines.close();
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: 1, replicationFactor: 2 }],
    timeout: 30000,
  });
  if (!created) {
    throw new Error(`createTopics answered that ${topic} exists already`);
  }
  await admin.disconnect();
  console.log(`OK ${topic}`);
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
