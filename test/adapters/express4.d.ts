// Express 4 is installed as the npm alias "express4" (npm:express@^4) beside Express 5; the two
// share @types/express for what the tests use (Application, Request, Response, the query parser).
declare module "express4" {
  import express = require("express");
  export = express;
}
