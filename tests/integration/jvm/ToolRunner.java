import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's own command-line tools, one after another, in this one JVM (for
 * tests/integration/test_jvm_tools.py): a tool's main class costs a JVM start-up each time
 * otherwise, and the differential scenario runs about forty of them per cluster.
 *
 * Each request is one line on stdin: tab-separated base64 fields, the main class, the tool's
 * stdin ("-" for none, as /dev/null) and its arguments. The answer is one line on the
 * original stdout: "@@result", the exit status, and base64 of what the tool wrote to stdout
 * and to stderr.
 *
 * What a separate JVM would give the tool, each run gets here:
 * - System.out, System.err and System.in of its own. They are installed once as streams that
 *   forward to the current run's buffers, before any tool class loads, so that Scala's Console
 *   and log4j's console appender, which keep the stream they first see, follow too.
 * - Its exit status: Kafka's tools leave through org.apache.kafka.common.utils.Exit, whose exit
 *   procedure here records the first status and unwinds the tool with an Error. What the tool
 *   writes after that first exit is dropped, as a real exit would end the process there. A main
 *   that returns gives 0; one that throws gives 1 with Java's "Exception in thread "main""
 *   report.
 * - No shutdown hooks: the only tool here that adds one (the console consumer) prints nothing
 *   from it unless asked to, and the process does not end after the tool.
 */
public final class ToolRunner {
    /** Where System.out or System.err goes at the moment. */
    private static final class Switch extends OutputStream {
        private volatile OutputStream target;

        Switch(OutputStream target) {
            this.target = target;
        }

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            target.write(b, off, len);
        }

        @Override
        public void flush() throws java.io.IOException {
            target.flush();
        }
    }

    /** Unwinds a tool that called Exit.exit. An Error, so that `catch (Exception e)` in a tool
     * does not turn a successful exit into a failure. */
    private static final class ExitCalled extends Error {
        ExitCalled() {
            super("Exit.exit", null, false, false);
        }
    }

    private static final OutputStream DISCARD = OutputStream.nullOutputStream();

    private static final class Run {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        Integer exitStatus;
        byte[] outAtExit;
        byte[] errAtExit;
    }

    private static volatile Run current;

    public static void main(String[] ignored) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        PrintStream runnerErr = new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8");
        Switch outSwitch = new Switch(runnerErr);
        Switch errSwitch = new Switch(runnerErr);
        System.setOut(new PrintStream(outSwitch, true, "UTF-8"));
        System.setErr(new PrintStream(errSwitch, true, "UTF-8"));
        InputStream requests = System.in;
        Exit.setExitProcedure((status, message) -> exit(status, outSwitch, errSwitch));
        Exit.setHaltProcedure((status, message) -> exit(status, outSwitch, errSwitch));
        Exit.setShutdownHookAdder((name, hook) -> { });

        BufferedReader reader = new BufferedReader(new InputStreamReader(requests, StandardCharsets.UTF_8));
        Base64.Decoder decoder = Base64.getDecoder();
        Base64.Encoder encoder = Base64.getEncoder();
        String line;
        while ((line = reader.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            String mainClass = new String(decoder.decode(fields[0]), StandardCharsets.UTF_8);
            byte[] stdin = fields[1].equals("-") ? new byte[0] : decoder.decode(fields[1]);
            String[] args = new String[fields.length - 2];
            for (int i = 2; i < fields.length; i++) {
                args[i - 2] = new String(decoder.decode(fields[i]), StandardCharsets.UTF_8);
            }

            Run run = new Run();
            current = run;
            System.setIn(new ByteArrayInputStream(stdin));
            outSwitch.target = run.out;
            errSwitch.target = run.err;
            int status = invoke(mainClass, args);
            System.out.flush();
            System.err.flush();
            outSwitch.target = runnerErr;
            errSwitch.target = runnerErr;
            current = null;
            byte[] out;
            byte[] err;
            synchronized (run) {
                if (run.exitStatus != null) {
                    status = run.exitStatus;
                    out = run.outAtExit;
                    err = run.errAtExit;
                } else {
                    out = run.out.toByteArray();
                    err = run.err.toByteArray();
                }
            }
            protocol.println("@@result\t" + status + "\t" + encoder.encodeToString(out) + "\t"
                + encoder.encodeToString(err));
        }
        // A tool that left a client open (kafka-transactions exits without closing its admin
        // client) must not keep the JVM alive; and no hook of Kafka's is registered here.
        Runtime.getRuntime().halt(0);
    }

    private static void exit(int status, Switch outSwitch, Switch errSwitch) {
        Run run = current;
        if (run != null) {
            synchronized (run) {
                if (run.exitStatus == null) {
                    System.out.flush();
                    System.err.flush();
                    run.exitStatus = status;
                    run.outAtExit = run.out.toByteArray();
                    run.errAtExit = run.err.toByteArray();
                    outSwitch.target = DISCARD;
                    errSwitch.target = DISCARD;
                }
            }
        }
        throw new ExitCalled();
    }

    private static int invoke(String mainClass, String[] args) {
        try {
            Method main = Class.forName(mainClass).getMethod("main", String[].class);
            main.invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof ExitCalled) {
                return 0; // the recorded status replaces this
            }
            StringWriter trace = new StringWriter();
            cause.printStackTrace(new PrintWriter(trace));
            System.err.print("Exception in thread \"main\" " + trace);
            return 1;
        } catch (ReflectiveOperationException e) {
            System.err.println("ToolRunner: cannot run " + mainClass + ": " + e);
            return 1;
        }
    }
}
