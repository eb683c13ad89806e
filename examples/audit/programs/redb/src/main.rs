//! redb: one table t in db.redb.
//!
//!     redb-audit setup   create db.redb holding k = "v1"
//!     redb-audit write   open it, set k = "v2", commit, print "saved"
//!     redb-audit read    open it (as the program does after a restart:
//!                        redb repairs the file if it was not closed) and
//!                        print k's value, or "none"
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

const T: TableDefinition<&str, &str> = TableDefinition::new("t");
const PATH: &str = "db.redb";

fn set(db: &Database, v: &str) -> Result<(), redb::Error> {
    let tx = db.begin_write()?;
    {
        let mut t = tx.open_table(T)?;
        t.insert("k", v)?;
    }
    tx.commit()?;
    Ok(())
}

fn run(mode: &str) -> Result<(), redb::Error> {
    match mode {
        "setup" => set(&Database::create(PATH)?, "v1"),
        "write" => {
            set(&Database::open(PATH)?, "v2")?;
            println!("saved");
            Ok(())
        }
        "read" => {
            let db = Database::open(PATH)?;
            let tx = db.begin_read()?;
            let t = tx.open_table(T)?;
            match t.get("k")? {
                Some(v) => println!("{}", v.value()),
                None => println!("none"),
            }
            Ok(())
        }
        _ => {
            eprintln!("usage: redb-audit setup|write|read");
            std::process::exit(2)
        }
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if let Err(e) = run(&mode) {
        eprintln!("redb: {e}");
        std::process::exit(1);
    }
}
