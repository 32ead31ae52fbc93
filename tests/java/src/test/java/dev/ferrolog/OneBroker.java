package dev.ferrolog;

import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * A test class's broker: one ferrolog on the embedded store, started
 * before the class's first test and shut down after its last, with an
 * AdminClient on it. Groups rebalance without the initial delay, so
 * members can join one after the other.
 */
abstract class OneBroker {
    static Ferrolog broker;
    static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = Ferrolog.start("group.initial.rebalance.delay.ms=0");
        admin = Clients.admin(broker.bootstrap());
    }

    @AfterAll
    static void stopBroker() throws Exception {
        admin.close();
        broker.close();
    }
}
